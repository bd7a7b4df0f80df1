/**
 * A whole Switchyard deployment the fault suite can hurt: its own Redis and PostgreSQL, fake providers, a
 * catalog file pointing at them, and real API and worker processes from the build (`dist/`), each of which
 * can be killed, signalled and started again.
 *
 *   const c = await startCluster({ name: 'worker-kill', env: { SYNC_WAIT_MS: '30000' } });
 *   const api = await c.startApi(); await c.startWorker();
 *   const org = await c.seed();
 *   ...
 *   await c.close();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import type Redis from 'ioredis';
import { createDb, type Db } from '../../../shared/db/client';
import { migrate } from '../../../shared/db/migrate';
import { createRedis } from '../../../shared/queue/redis';
import { portBelowEphemeral } from '../../helpers/port-below-ephemeral';
import { waitFor } from './wait';
import { AccountsService } from '../../../shared/services/accounts.service';
import { QUEUES, type QueueName } from '../../../shared/queue/queue-names';
import { workerSlots } from '../../../workers/worker-pool';
import { loadConfig } from '../../../shared/config/env';
import { startFakeProvider, type FakeKnobs, type FakeProvider } from '../../../fakes/fake-provider';
import { stackCatalog, STACK_MODELS, type RawCatalog } from '../../helpers/test-stack';
import { startPostgres, startRedis, type PgServer, type RedisServer } from './services';

export const ROOT = path.resolve(__dirname, '../../..');
export const FAULTS_SECRET = 'faults-secret-not-for-production';
export const FAKE_KEY = 'fake-provider-key';
export const PREFIX = '{faults}';

/** Model ids of the fault catalog. */
export const MODELS = {
  ...STACK_MODELS,
  /** One endpoint on the primary fake only: its faults reach the caller. */
  chat: STACK_MODELS.chat,
  /** The primary fake first, the backup fake second: faults of the first are survived by fallback. */
  chatFallback: 'faults/chat-fallback',
} as const;

/** Price of the text models (RUB per 1,000,000 tokens), for expected charges. */
export const CHAT_PRICE = { prompt: 40, completion: 160 };

export interface ClusterOptions {
  /** Folder name prefix (the temp folder is kept on failure when FAULTS_KEEP=1). */
  name: string;
  /** Environment of every API and worker process, over the defaults. */
  env?: Record<string, string>;
  /** timeoutMs of the fake providers in the catalog (default 10 s). */
  providerTimeoutMs?: number;
  knobs?: FakeKnobs;
  /** Changes the fault catalog before it is written (e.g. batch prices on an endpoint). */
  catalog?: (raw: RawCatalog) => void;
}

export interface Proc {
  /** `all`: one process serving the API and the workers, as `npm start` with WEB_CONCURRENCY=1. */
  role: 'api' | 'worker' | 'all';
  pid: number;
  /** API and all only. */
  port: number;
  url: string;
  log: string;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly alive: boolean;
  kill(signal?: NodeJS.Signals): void;
}

export interface SeededOrg {
  organizationId: string;
  ownerUserId: string;
  ownerToken: string;
  key: { id: string; key: string };
  auth: Record<string, string>;
}

export interface Cluster {
  dir: string;
  redis: RedisServer;
  pg: PgServer;
  /** The primary fake (every provider of the stack catalog) and the backup fake (second endpoint of chatFallback). */
  fake: FakeProvider;
  backup: FakeProvider;
  db: Db;
  accounts: AccountsService;
  /** A patient connection of the suite's own (queue inspection). */
  conn: Redis;
  queues: Record<QueueName, Queue>;
  env: Record<string, string>;
  procs: Proc[];
  startApi(env?: Record<string, string>): Promise<Proc>;
  startWorker(env?: Record<string, string>): Promise<Proc>;
  /** One process serving the API and the workers (`npm start`'s process: bin/start.ts, WEB_CONCURRENCY=1). */
  startAll(env?: Record<string, string>): Promise<Proc>;
  /** Resolves once `n` worker processes serve the text queue. */
  waitForWorkers(n: number, timeoutMs?: number): Promise<void>;
  seed(opts?: { balance?: string; keyLimit?: string; rateLimitPerMinute?: number }): Promise<SeededOrg>;
  /**
   * One text request through `api` with the fakes answering at once, so the first request under test does not
   * pay the processes' cold start (connections, JIT). Uses an organization of its own; returns its id.
   */
  warmUp(api: Proc): Promise<string>;
  /** Every process log, last lines, for failure messages. */
  tails(lines?: number): string;
  close(): Promise<void>;
}

function faultCatalog(primaryUrl: string, backupUrl: string, timeoutMs: number): RawCatalog {
  const raw = stackCatalog(primaryUrl);
  for (const p of Object.values(raw.providers)) p.timeoutMs = timeoutMs;
  raw.providers.backup = { kind: 'openai', baseUrl: `${backupUrl}/openai/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs };
  const chat = raw.models[MODELS.chat];
  raw.models[MODELS.chatFallback] = {
    displayName: 'Chat with fallback',
    type: 'chat',
    endpoints: [
      { ...chat.endpoints[0], provider: 'openai' },
      { ...chat.endpoints[0], provider: 'backup' },
    ],
  };
  return raw;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sy-faults-${opts.name}-`));
  fs.chmodSync(dir, 0o755); // the postgres user must reach pg/ below it
  const [redis, pg] = await Promise.all([startRedis(path.join(dir, 'redis')), startPostgres(path.join(dir, 'pg'))]);
  await migrate(pg.url);
  const fake = await startFakeProvider({ knobs: opts.knobs });
  const backup = await startFakeProvider();
  const catalogPath = path.join(dir, 'catalog.json');
  const raw = faultCatalog(fake.url, backup.url, opts.providerTimeoutMs ?? 10_000);
  opts.catalog?.(raw);
  fs.writeFileSync(catalogPath, JSON.stringify(raw, null, 2));
  const db = createDb(pg.url, { max: 10 });
  const accounts = new AccountsService(db, FAULTS_SECRET);
  const conn = createRedis(redis.url, { name: 'faults-suite', patient: true });
  conn.on('error', () => undefined); // Redis is restarted on purpose
  const queues = Object.fromEntries(Object.values(QUEUES).map((q) => [q, new Queue(q, { connection: conn, prefix: PREFIX })])) as Record<QueueName, Queue>;
  for (const q of Object.values(queues)) q.on('error', () => undefined);

  const env: Record<string, string> = {
    DATABASE_URL: pg.url,
    REDIS_URL: redis.url,
    SWITCHYARD_CATALOG: catalogPath,
    SWITCHYARD_SECRET: FAULTS_SECRET,
    SWITCHYARD_HOME: path.join(dir, 'home'),
    QUEUE_PREFIX: PREFIX,
    SYNC_WAIT_MS: '15000',
    LOG_LEVEL: 'warn',
    FAKE_PROVIDER_KEY: FAKE_KEY,
    CALLBACK_ALLOW_PRIVATE: 'true',
    MEDIA_POLL_MS: '200',
    MEDIA_POLL_MAX_MS: '500',
    // A killed worker's jobs are re-run within seconds instead of 45 s (lock 30 s + check every 15 s).
    WORKER_LOCK_DURATION_MS: '4000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    // Generations no worker will ever finish are failed and released quickly (production: minutes).
    REAPER_EVERY_MS: '1000',
    REAPER_MIN_AGE_MS: '5000',
    // A killed process's reservation leases are released by the reaper 5 s after its last renewal (production: 15 s).
    LEASE_TTL_MS: '5000',
    DATABASE_POOL_SIZE: '10',
    RATE_LIMIT_PER_MINUTE: '0',
    SHUTDOWN_TIMEOUT_MS: '20000',
    // Several workers on one host: each its own /metrics port (the default 9091 would collide).
    WORKER_METRICS_PORT: '0',
    ...opts.env,
  };
  const procs: Proc[] = [];
  let seq = 0;

  async function spawnProc(role: Proc['role'], extra: Record<string, string> = {}): Promise<Proc> {
    const port = role === 'worker' ? 0 : await portBelowEphemeral();
    const log = path.join(dir, `${role}-${++seq}.log`);
    const fd = fs.openSync(log, 'a');
    const script = path.join(ROOT, 'dist', { api: 'api/main.js', worker: 'workers/main.js', all: 'bin/start.js' }[role]);
    if (role === 'all') extra = { WEB_CONCURRENCY: '1', ...extra };
    const child = spawn(process.execPath, [script], {
      cwd: dir,
      env: { ...process.env, ...env, ...extra, PORT: String(port), NODE_ENV: 'production' },
      stdio: ['ignore', fd, fd],
    });
    fs.closeSync(fd);
    running.add(child);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => {
        running.delete(child);
        resolve({ code, signal });
      }),
    );
    const p: Proc = {
      role,
      pid: child.pid!,
      port,
      url: `http://127.0.0.1:${port}`,
      log,
      child,
      exited,
      get alive() {
        return child.exitCode === null && child.signalCode === null;
      },
      kill(signal: NodeJS.Signals = 'SIGKILL') {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      },
    };
    procs.push(p);
    return p;
  }

  const tailOf = (file: string, lines: number) => {
    try {
      return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  };

  /** Resolves once the process answers /healthz. */
  async function listening(p: Proc): Promise<Proc> {
    const answers = async () => {
      if (!p.alive) throw new Error(`${p.role} process exited during start:\n${tailOf(p.log, 30)}`);
      return fetch(`${p.url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
    };
    await waitFor(`the ${p.role} process to listen`, answers, 30_000).catch((e: Error) => {
      throw p.alive ? new Error(`${p.role} process did not listen within 30 s:\n${tailOf(p.log, 30)}`) : e;
    });
    return p;
  }

  const cluster: Cluster = {
    dir,
    redis,
    pg,
    fake,
    backup,
    db,
    accounts,
    conn,
    queues,
    env,
    procs,
    async startApi(extra) {
      return listening(await spawnProc('api', extra));
    },
    async startAll(extra) {
      return listening(await spawnProc('all', extra));
    },
    async startWorker(extra) {
      const before = await queues.text.getWorkersCount();
      const p = await spawnProc('worker', extra);
      const serving = async () => {
        if (!p.alive) throw new Error(`worker process exited during start:\n${tailOf(p.log, 30)}`);
        return (await queues.text.getWorkersCount()) > before;
      };
      await waitFor('the worker process to serve the queues', serving, 30_000).catch((e: Error) => {
        throw p.alive ? new Error(`worker process did not serve the queues within 30 s:\n${tailOf(p.log, 30)}`) : e;
      });
      return p;
    },
    async waitForWorkers(n, timeoutMs = 30_000) {
      // Each process runs several BullMQ Workers on the text queue (workers/worker-pool.ts workerSlots).
      const perProcess = workerSlots(QUEUES.text, loadConfig({ ...process.env, ...env }, []).worker).length;
      await waitFor(`${n} worker processes`, async () => (await queues.text.getWorkersCount()) === n * perProcess, timeoutMs).catch(async () => {
        throw new Error(`expected ${n} worker processes (${n * perProcess} text Workers), see ${await queues.text.getWorkersCount()} text Workers`);
      });
    },
    async seed(o = {}) {
      const org = await accounts.createOrganization({ name: 'Faults', balance: o.balance ?? '1000' });
      const key = await accounts.createKey({ organizationId: org.organizationId, name: 'faults', limit: o.keyLimit, rateLimitPerMinute: o.rateLimitPerMinute });
      return { ...org, key: { id: key.id, key: key.key }, auth: { Authorization: `Bearer ${key.key}`, 'Content-Type': 'application/json' } };
    },
    async warmUp(api) {
      const org = await cluster.seed({ balance: '10' });
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${api.url}/v1/responses`, { method: 'POST', headers: org.auth, body: JSON.stringify({ model: MODELS.chat, input: 'warm up', max_output_tokens: 16 }) });
        if (res.status !== 200) throw new Error(`warm-up request answered ${res.status}: ${await res.text()}`);
      }
      return org.organizationId;
    },
    tails(lines = 15) {
      return procs.map((p) => `--- ${p.role} pid ${p.pid} (${p.log})\n${tailOf(p.log, lines)}`).join('\n');
    },
    async close() {
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
      await Promise.all(Object.values(queues).map((q) => q.close().catch(() => undefined)));
      conn.disconnect();
      await db.$disconnect().catch(() => undefined);
      await Promise.all([fake.close(), backup.close()]);
      await pg.stop().catch(() => undefined);
      await redis.stop('SIGKILL').catch(() => undefined);
      if (process.env.FAULTS_KEEP !== '1') fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

/**
 * The cluster of a fault case file: started before its case, closed after it. Returns the getter its case reads the
 * cluster through (jest runs the hooks before the case).
 */
export function useCluster(opts: ClusterOptions): () => Cluster {
  let c: Cluster | undefined;
  beforeAll(async () => {
    c = await startCluster(opts);
  });
  afterAll(async () => {
    await c?.close();
  });
  return () => c!;
}
