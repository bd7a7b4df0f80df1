import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { isAlive, sleep, type RuntimeLogger } from './process-utils';

/**
 * One process at a time starts (or stops) an embedded server on a data directory: `npm start` and a `switchyard`
 * command run at once (the README's quick start pasted whole) must never both initialise the cluster, both start it,
 * or both create its database (the service died of "duplicate key value violates unique constraint
 * pg_database_datname_index"). The lock is a file, `<dataDir>/start.lock`, holding who holds it; whoever finds it held
 * by a live process waits, saying so once, then finds the server the other started and uses it.
 *
 * The file is made whole beside its place and linked into it (`link` fails when the name exists: atomic, on every
 * POSIX file system), so a reader never sees it half-written. A lock whose process is gone (killed mid-start) is
 * broken by renaming it away first: of two processes breaking the same lock, one rename wins.
 */
export interface LockHolder {
  pid: number;
  /** A short-lived `switchyard` command (true) or a service (false). */
  transient: boolean;
  token: string;
}

export interface StartLockOptions {
  transient: boolean;
  logger: RuntimeLogger;
  /** What the lock guards, for the waiting message: "the embedded PostgreSQL in ./.switchyard/pg". */
  what: string;
  /** How long to wait for another process's start (default 180 s: initdb and a first start on a slow disk). */
  waitMs?: number;
}

function readHolder(file: string): LockHolder | null {
  try {
    const h = JSON.parse(fs.readFileSync(file, 'utf8')) as LockHolder;
    return Number.isInteger(h.pid) && typeof h.token === 'string' ? h : null;
  } catch {
    return null;
  }
}

/** Takes the lock, or answers who holds it. */
function tryTake(file: string, me: LockHolder): LockHolder | null {
  const tmp = `${file}.${process.pid}.${me.token}`;
  fs.writeFileSync(tmp, JSON.stringify(me), { mode: 0o644 });
  try {
    fs.linkSync(tmp, file);
    return null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    return readHolder(file) ?? { pid: 0, transient: true, token: '' };
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** Removes a lock whose process is gone, unless another process replaced it meanwhile. */
function breakStale(file: string, stale: LockHolder): void {
  const aside = `${file}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    fs.renameSync(file, aside);
  } catch {
    return; // another process broke it first
  }
  const moved = readHolder(aside);
  // Between reading the stale lock and renaming it, another process may have broken it and taken a lock of its own:
  // put that one back (link fails only if yet another lock is in place, which then stands).
  if (moved && moved.token !== stale.token) {
    try {
      fs.linkSync(aside, file);
    } catch {
      // a newer lock stands
    }
  }
  fs.rmSync(aside, { force: true });
}

const who = (h: LockHolder) => (h.transient ? `a switchyard command (pid ${h.pid})` : `the service (pid ${h.pid})`);

/** Runs `fn` holding the lock `file`, waiting while another live process holds it. */
export async function withStartLock<T>(file: string, opts: StartLockOptions, fn: () => Promise<T>): Promise<T> {
  const me: LockHolder = { pid: process.pid, transient: opts.transient, token: randomBytes(8).toString('hex') };
  const waitMs = opts.waitMs ?? 180_000;
  const until = Date.now() + waitMs;
  let told = false;
  for (;;) {
    const holder = tryTake(file, me);
    if (!holder) break;
    // An unreadable lock is one being replaced this instant: look again. A lock of a process that is gone is broken.
    if (holder.pid > 0 && !isAlive(holder.pid)) {
      opts.logger.debug(`${opts.what}: breaking the start lock of pid ${holder.pid}, which is gone`);
      breakStale(file, holder);
      continue;
    }
    if (!told && holder.pid > 0) {
      told = true;
      opts.logger.warn(`${opts.what} is being started or stopped by ${who(holder)}: waiting for it`);
    }
    if (Date.now() > until) throw new Error(`${opts.what} is still being started or stopped by ${who(holder)} after ${Math.round(waitMs / 1000)} s: try again once it is up, or stop it`);
    await sleep(100);
  }
  try {
    return await fn();
  } finally {
    if (readHolder(file)?.token === me.token) fs.rmSync(file, { force: true });
  }
}
