import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { migrate } from '../shared/db/migrate';
import { createDb, type Db } from '../shared/db/client';
import { AccountsService } from '../shared/services/accounts.service';

/** The first line a child process prints (the fake provider's URL, a load run's JSON result). */
export function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl).trim());
    });
    child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
  });
}

/** Waits until a gateway at `url` answers /readyz (every 200 ms, for up to `ms`). */
export async function waitReady(url: string, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`gateway ${url} not ready`);
}

/** Runs one statement on the server of `serverUrl` (its maintenance database): CREATE or DROP DATABASE. */
export async function onServer(serverUrl: string, sql: string): Promise<void> {
  const c = new Client({ connectionString: serverUrl });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** Drops and recreates the database of `url`, then migrates it: every bench run starts from an empty schema. */
export async function resetDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = u.pathname.slice(1);
  u.pathname = '/postgres';
  const admin = new Client({ connectionString: u.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  await migrate(url);
}

/** What a bench that starts Switchyard processes of its own works with (bench/batch-bench.ts, media-scale.ts, fairness.ts). */
export interface BenchStack {
  home: string;
  db: Db;
  accounts: AccountsService;
  redis: Redis;
  /** Deletes the bench's Redis keys (its prefix). */
  wipe(): Promise<void>;
  /** A fake provider from dist/fakes/main.js with these knobs, and its URL once it listens. */
  fake(knobs: object): Promise<{ child: ChildProcess; url: string }>;
  /** Writes the catalog the processes load. */
  catalog(catalog: object): void;
  /** An organization with this balance and an API key without a rate limit. */
  seed(name: string, balance: string): Promise<{ organizationId: string; key: string }>;
  /** A Switchyard process from dist/ (`api` or `worker`) with the bench's environment, `env` over it. */
  start(role: 'api' | 'worker', env?: Record<string, string>): ChildProcess;
  /** Once the processes have stopped: the database connection closed, the bench's Redis keys and home folder gone. */
  close(): Promise<void>;
}

/**
 * An empty database (dropped, re-created, migrated), an empty Redis prefix and a home folder of its own, and the
 * environment every process of the bench starts with (`env` over the defaults: the catalog in the home, the bench's
 * secret and provider key, warnings only).
 */
export async function benchStack(o: { dist: string; databaseUrl: string; redisUrl: string; prefix: string; name: string; env?: Record<string, string> }): Promise<BenchStack> {
  await resetDatabase(o.databaseUrl);
  const redis = new Redis(o.redisUrl);
  const wipe = async () => {
    const keys = await redis.keys(`${o.prefix}*`);
    if (keys.length) await redis.del(...keys);
  };
  await wipe();
  const home = fs.mkdtempSync(path.join(os.tmpdir(), `sy-${o.name}-bench-`));
  const catalogPath = path.join(home, 'catalog.json');
  const db = createDb(o.databaseUrl);
  const accounts = new AccountsService(db, 'bench');
  const env = {
    ...process.env,
    DATABASE_URL: o.databaseUrl,
    REDIS_URL: o.redisUrl,
    QUEUE_PREFIX: o.prefix,
    SWITCHYARD_CATALOG: catalogPath,
    SWITCHYARD_SECRET: 'bench',
    SWITCHYARD_HOME: home,
    BENCH_PROVIDER_KEY: 'bench',
    LOG_LEVEL: 'warn',
    ...o.env,
  };
  return {
    home,
    db,
    accounts,
    redis,
    wipe,
    async fake(knobs) {
      const child = spawn(process.execPath, [path.join(o.dist, 'fakes/main.js'), '--port', '0', '--knobs', JSON.stringify(knobs)]);
      return { child, url: await firstLine(child) };
    },
    catalog: (catalog) => fs.writeFileSync(catalogPath, JSON.stringify(catalog)),
    async seed(name, balance) {
      const org = await accounts.createOrganization({ name, balance });
      return { organizationId: org.organizationId, key: (await accounts.createKey({ organizationId: org.organizationId, rateLimitPerMinute: 0 })).key };
    },
    start: (role, extra = {}) => spawn(process.execPath, [path.join(o.dist, role === 'api' ? 'api/main.js' : 'workers/main.js')], { env: { ...env, ...extra }, stdio: 'ignore' }),
    async close() {
      await db.$disconnect();
      await wipe();
      redis.disconnect();
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}
