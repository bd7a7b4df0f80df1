import { Client } from 'pg';
import type { Db } from '../../../shared/db/client';

export interface RowLock {
  /** The backend holding the lock (waiters name it in pg_blocking_pids). */
  pid: number;
  /** Ends the transaction and its connection; later calls do nothing. */
  release(): Promise<void>;
}

/** A transaction of the test's own holding an organization's row lock, as a long settlement of another process would. */
export async function lockOrganization(url: string, organizationId: string): Promise<RowLock> {
  const client = new Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [organizationId]);
  let released = false;
  return {
    pid: rows[0].pid,
    async release() {
      if (released) return;
      released = true;
      await client.query('ROLLBACK').catch(() => undefined);
      await client.end();
    },
  };
}

/** The backends whose `sy_ledger_group` call waits on a row lock. */
export async function ledgerBatchesWaiting(db: Db): Promise<number[]> {
  const rows = await db.$queryRawUnsafe<Array<{ pid: number }>>(`SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM sy_ledger_group(%'`);
  return rows.map((r) => r.pid);
}
