/**
 * The fault suite's own Redis and PostgreSQL: started on free ports in a temporary folder, stopped and started
 * again on the same data and port (the faults under test), never the machine's shared 5432/6379.
 */
import { Client } from 'pg';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../../shared/runtime/embedded-postgres';
import { ephemeralPort } from '../../../shared/runtime/process-utils';
import { waitFor } from './wait';
import { redisPing } from '../../../shared/runtime/embedded-redis';

export interface RedisServer {
  port: number;
  url: string;
  /** SIGTERM (Redis flushes its append-only file) or SIGKILL; resolves once the process is gone. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts it again on the same port and data; resolves once it answers PING. */
  start(): Promise<void>;
  /** SIGKILL, its append-only files deleted, started again on the same port: a Redis back without its data. */
  wipe(): Promise<void>;
  readonly running: boolean;
}

/** `redis-server` from PATH, no RDB snapshots, append-only file on (jobs survive a restart). */
export async function startRedis(dir: string): Promise<RedisServer> {
  fs.mkdirSync(dir, { recursive: true });
  let port = await ephemeralPort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const log = fs.openSync(path.join(dir, 'redis.log'), 'a');

  async function start(): Promise<void> {
    const logged = fs.fstatSync(log).size;
    const c = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--dir', dir, '--protected-mode', 'no'], {
      stdio: ['ignore', log, log],
    });
    child = c;
    exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    const answers = async () => {
      if (c.exitCode !== null) {
        const said = fs.readFileSync(path.join(dir, 'redis.log'), 'utf8').slice(logged);
        throw Object.assign(new Error(`redis-server exited (${c.exitCode}); see ${dir}/redis.log`), { portTaken: /address already in use/i.test(said) });
      }
      return redisPing(port, '');
    };
    await waitFor('redis-server to answer', answers, 15_000);
  }

  async function stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    await exited;
  }

  await onFreePort(start, async () => void (port = await ephemeralPort()));
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get running() {
      return !!child && child.exitCode === null && child.signalCode === null;
    },
    stop,
    start,
    async wipe() {
      await stop('SIGKILL');
      fs.rmSync(path.join(dir, 'appendonlydir'), { recursive: true, force: true });
      await start();
    },
  };
}

export interface PgServer {
  port: number;
  /** URL of the suite's database (`faults`). */
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * True once PostgreSQL refuses a new connection (shutting down, or gone): a stop's first effect, seconds before the
 * stop's shutdown checkpoint ends and `stop()` resolves. Its sessions are ended at the same moment.
 */
export async function refusesConnections(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
  } catch {
    return true;
  }
  await client.end().catch(() => undefined);
  return false;
}

/** The embedded PostgreSQL (shared/runtime/embedded-postgres.ts); as root it runs as the `postgres` user. */
export async function startPostgres(dir: string): Promise<PgServer> {
  let port = await ephemeralPort();
  let pg!: EmbeddedPostgres;
  await onFreePort(
    async () => {
      pg = await startEmbeddedPostgres({ dataDir: dir, port, database: 'faults' }).catch((e: Error) => {
        throw Object.assign(e, { portTaken: /address already in use|could not create any TCP\/IP sockets/i.test(e.message) });
      });
    },
    async () => void (port = await ephemeralPort()),
  );
  return {
    port,
    url: pg.url,
    async stop() {
      await pg.stop();
    },
    async start() {
      pg = await startEmbeddedPostgres({ dataDir: dir, port, database: 'faults' });
    },
  };
}

/**
 * A server's first start on the port `ephemeralPort` chose: a port free when chosen can be taken before the server binds it
 * (by another process's outgoing connection, from the same ephemeral range), so a start refused for that reason
 * (`portTaken`) is tried again on another port, up to 5 times. Restarts keep their port: that is the fault under test.
 */
async function onFreePort(start: () => Promise<void>, newPort: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      if (!(e as { portTaken?: boolean }).portTaken || attempt >= 5) throw e;
      await newPort();
    }
  }
}
