/**
 * PgBouncer (the Debian package's `pgbouncer` on PATH) in transaction pooling mode in front of the test
 * PostgreSQL, on a loopback port: the way hosted PostgreSQL is usually reached at scale. Every database name
 * is passed through (`* = host=… port=…`), so the per-file test databases work through it unchanged.
 * PgBouncer refuses to run as root; it is started as the `postgres` (else `nobody`) user then.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { isRoot, lookupUser } from '../../../shared/runtime/process-utils';
import { portBelowEphemeral } from '../../helpers/port-below-ephemeral';
import { waitFor } from '../../helpers/until';

export interface PgBouncer {
  port: number;
  /** Base URL through PgBouncer (same user as the upstream URL, path to be replaced by the database). */
  url: string;
  stop(): Promise<void>;
}

export async function startPgBouncer(dir: string, upstreamUrl: string, opts: { poolSize?: number } = {}): Promise<PgBouncer> {
  fs.mkdirSync(dir, { recursive: true });
  const up = new URL(upstreamUrl);
  const user = decodeURIComponent(up.username || 'postgres');
  const port = await portBelowEphemeral();
  const conf = path.join(dir, 'pgbouncer.ini');
  const users = path.join(dir, 'userlist.txt');
  fs.writeFileSync(users, `"${user}" "${decodeURIComponent(up.password)}"\n`);
  fs.writeFileSync(
    conf,
    [
      '[databases]',
      `* = host=${up.hostname} port=${up.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      'pool_mode = transaction',
      'max_client_conn = 2000',
      `default_pool_size = ${opts.poolSize ?? 8}`,
      'server_reset_query =',
      'ignore_startup_parameters = extra_float_digits,options',
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  const args = [conf];
  if (isRoot()) {
    const who = lookupUser('postgres') ? 'postgres' : 'nobody';
    const ids = lookupUser(who)!;
    fs.chownSync(dir, ids.uid, ids.gid);
    for (const f of [conf, users]) fs.chownSync(f, ids.uid, ids.gid);
    args.unshift('-u', who);
  }
  const child: ChildProcess = spawn('pgbouncer', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = new URL(upstreamUrl);
  url.port = String(port);
  url.hostname = '127.0.0.1';
  // Transaction pooling before PgBouncer 1.21 keeps no named statements: every query is planned anew (shared/db/client.ts).
  url.searchParams.set('pgbouncer', 'true');
  let last: Error | undefined;
  const answers = async () => {
    const c = new Client({ connectionString: url.toString() });
    try {
      await c.connect();
      await c.query('SELECT 1');
      await c.end();
      return true;
    } catch (e) {
      await c.end().catch(() => undefined);
      if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${output.trim()}`);
      last = e as Error;
      return false;
    }
  };
  await waitFor('pgbouncer to answer', answers, 15_000, 100).catch((e: Error) => {
    throw child.exitCode !== null ? e : new Error(`pgbouncer did not answer within 15 s: ${last?.message}`);
  });
  return {
    port,
    url: url.toString(),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT');
      await exited;
    },
  };
}
