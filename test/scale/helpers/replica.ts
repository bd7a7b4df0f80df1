/**
 * A PostgreSQL primary of its own and a streaming replica of it (the machine's PostgreSQL binaries, PG_BIN, default
 * /usr/lib/postgresql/15/bin): initdb, then `pg_basebackup -R` and a hot standby on another port. A cluster of its
 * own because a base backup copies the whole cluster (the shared test server holds every other test's databases).
 * PostgreSQL refuses to run as root: as root, the servers run as the `postgres` user.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { isRoot, lookupUser } from '../../../shared/runtime/process-utils';
import { portBelowEphemeral } from '../../helpers/port-below-ephemeral';
import { waitFor } from '../../helpers/until';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface ReplicaPair {
  primaryUrl(db: string): string;
  replicaUrl(db: string): string;
  /** Resolves once the replica has replayed everything the primary has written so far. */
  caughtUp(): Promise<void>;
  /** Stops replaying (received WAL waits): the replica lags. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Stops the replica at once (`-m immediate`, as a crash). */
  stopReplica(): void;
  stop(): void;
}

function run(cmd: string, args: string[]): string {
  const bin = path.join(BIN, cmd);
  const owner = isRoot() ? lookupUser('postgres') : null;
  return execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...(owner && { uid: owner.uid, gid: owner.gid }) });
}

const url = (port: number, db: string) => `postgresql://postgres@127.0.0.1:${port}/${db}`;

async function one<T>(u: string, sql: string): Promise<T> {
  const c = new Client({ connectionString: u });
  await c.connect();
  try {
    return (await c.query(sql)).rows[0] as T;
  } finally {
    await c.end();
  }
}

export async function startReplicaPair(): Promise<ReplicaPair> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-replica-'));
  const owner = isRoot() ? lookupUser('postgres') : null;
  if (owner) fs.chownSync(dir, owner.uid, owner.gid);
  const [pdir, rdir] = [path.join(dir, 'primary'), path.join(dir, 'replica')];
  const [pport, rport] = [await portBelowEphemeral(), await portBelowEphemeral()];
  const opts = (port: number) => `-c port=${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c fsync=off -c shared_buffers=32MB`;
  run('initdb', ['-D', pdir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C']);
  run('pg_ctl', ['-D', pdir, '-l', path.join(dir, 'primary.log'), '-o', `${opts(pport)} -c wal_level=replica -c max_wal_senders=4`, '-w', 'start']);
  run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(pport), '-U', 'postgres', '-D', rdir, '-R', '-X', 'stream']);
  run('pg_ctl', ['-D', rdir, '-l', path.join(dir, 'replica.log'), '-o', `${opts(rport)} -c hot_standby=on`, '-w', 'start']);
  let replicaUp = true;
  const stopReplica = () => {
    if (!replicaUp) return;
    replicaUp = false;
    run('pg_ctl', ['-D', rdir, '-m', 'immediate', '-w', 'stop']);
  };
  return {
    primaryUrl: (db) => url(pport, db),
    replicaUrl: (db) => url(rport, db),
    async caughtUp() {
      const { lsn } = await one<{ lsn: string }>(url(pport, 'postgres'), 'SELECT pg_current_wal_lsn()::text AS lsn');
      await waitFor('the replica to replay the primary', async () =>
        (await one<{ done: boolean }>(url(rport, 'postgres'), `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS done`)).done);
    },
    async pauseReplay() {
      await one(url(rport, 'postgres'), 'SELECT pg_wal_replay_pause()');
      await waitFor('replay paused', async () => (await one<{ s: string }>(url(rport, 'postgres'), 'SELECT pg_get_wal_replay_pause_state() AS s')).s === 'paused');
    },
    async resumeReplay() {
      await one(url(rport, 'postgres'), 'SELECT pg_wal_replay_resume()');
    },
    stopReplica,
    stop() {
      try {
        stopReplica();
      } finally {
        run('pg_ctl', ['-D', pdir, '-m', 'immediate', '-w', 'stop']);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
