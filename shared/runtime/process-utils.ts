import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** The part of a logger the runtime helpers use (a winston Logger fits). */
export interface RuntimeLogger {
  debug(message: string, ...meta: unknown[]): unknown;
  info(message: string, ...meta: unknown[]): unknown;
  warn(message: string, ...meta: unknown[]): unknown;
  error(message: string, ...meta: unknown[]): unknown;
}

export const silentLogger: RuntimeLogger = { debug() {}, info() {}, warn() {}, error() {} };

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** True when a process with this pid exists (EPERM: it exists but belongs to someone else). */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The command line of a live process ('' when unknown): /proc on Linux, `ps` elsewhere. */
export function processCommand(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    try {
      return execFileSync('ps', ['-p', String(pid), '-o', 'command='], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  }
}

/** uid and gid of a system user, or null when there is none. */
export function lookupUser(name: string): { uid: number; gid: number } | null {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
  } catch {
    return null;
  }
}

/**
 * Throws a clear error when a user (uid/gid) cannot reach `target`: every ancestor directory needs its
 * execute bit for that user. Used when root hands the data directory to the `postgres` system user.
 */
export function assertReachable(target: string, ids: { uid: number; gid: number }, who: string, hint: string): void {
  let dir = path.resolve(target);
  const chain: string[] = [];
  for (;;) {
    chain.unshift(dir);
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  for (const d of chain) {
    let st: fs.Stats;
    try {
      st = fs.statSync(d);
    } catch {
      return; // not created yet: its parents were checked
    }
    if (!st.isDirectory()) continue;
    const bit = st.uid === ids.uid ? 0o100 : st.gid === ids.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) throw new Error(`${who} cannot enter ${d} (needed for ${target}): ${hint}`);
  }
}

/** The full path of an executable found on PATH, or null. */
export function findOnPath(name: string, envPath: string | undefined): string | null {
  for (const dir of (envPath ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      if (fs.statSync(candidate).isFile()) {
        fs.accessSync(candidate, fs.constants.X_OK);
        return candidate;
      }
    } catch {
      // keep looking
    }
  }
  return null;
}

export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * A port the kernel hands out for port 0 (its ephemeral range), free now: for a server started at once with retry on a
 * taken port (test/helpers/port-below-ephemeral.ts is for one told its port long before it listens).
 */
export function ephemeralPort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen({ port: 0, host, exclusive: true }, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** `preferred` when nothing listens there, else a free port from the OS. */
export async function choosePort(preferred: number | undefined): Promise<number> {
  if (preferred && (await isPortFree(preferred))) return preferred;
  return ephemeralPort();
}

export function readIntFile(file: string): number | undefined {
  try {
    const n = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Writes a file with a mode that umask cannot widen, replacing it atomically. */
export function writePrivateFile(file: string, content: string, mode = 0o600): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, content, { mode });
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
}

/**
 * Who is responsible for stopping a shared embedded service: one handle (`token`) of one process (`pid`).
 * A `transient` owner (the CLI, which stops the service right after its command) hands over to a long-lived
 * process (the service) that finds it running.
 */
export interface Owner {
  pid: number;
  transient: boolean;
  token: string;
}

export function readOwner(file: string): Owner | null {
  try {
    const o = JSON.parse(fs.readFileSync(file, 'utf8')) as Owner;
    return Number.isInteger(o.pid) ? { pid: o.pid, transient: !!o.transient, token: String(o.token) } : null;
  } catch {
    return null;
  }
}

/** Records this handle as the owner; returns its token. */
export function writeOwner(file: string, transient: boolean): string {
  const token = randomBytes(8).toString('hex');
  writePrivateFile(file, JSON.stringify({ pid: process.pid, transient, token }), 0o644);
  return token;
}

export function ownedBy(file: string, token: string | undefined): boolean {
  return !!token && readOwner(file)?.token === token;
}

/** Whether a handle finding the service running should take over stopping it. */
export function shouldTakeOver(file: string, transient: boolean): boolean {
  const owner = readOwner(file);
  if (!owner || !isAlive(owner.pid)) return true;
  return owner.transient && !transient;
}

/**
 * A tiny shell loop that sends `signal` to `childPid` once this process is gone (even after SIGKILL, where
 * no exit handler runs), provided the owner file still names this process. It exits by itself once the
 * child is gone. Not available on Windows.
 */
export function spawnWatchdog(childPid: number, signal: 'TERM' | 'INT', ownerFile: string, parentPid = process.pid): void {
  if (os.platform() === 'win32') return;
  const script = [
    'p="$1"; c="$2"; s="$3"; f="$4"',
    'while kill -0 "$p" 2>/dev/null; do kill -0 "$c" 2>/dev/null || exit 0; sleep 1; done',
    'case "$(cat "$f" 2>/dev/null)" in *"\\"pid\\":$p,"*) kill -"$s" "$c" 2>/dev/null;; esac',
  ].join('\n');
  try {
    const child = spawn('/bin/sh', ['-c', script, 'switchyard-watchdog', String(parentPid), String(childPid), signal, ownerFile], {
      detached: true,
      stdio: 'ignore',
    });
    child.on('error', () => {});
    child.unref();
  } catch {
    // best effort: the service's own stop() remains the main path
  }
}

/** True when `p` settles within `ms` (the timer is cleared either way, so nothing lingers). */
export function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]).finally(() => clearTimeout(timer));
}

/**
 * Stops an embedded server this process may own: when another process has taken it over, only our pipes are
 * dropped; otherwise the polite signal, and the hard one if it is still alive after `graceMs`.
 */
export async function stopOwnedChild(o: {
  name: string;
  pid: number;
  ownerFile: string;
  token: string | undefined;
  own?: ChildProcess;
  ownExit?: Promise<void>;
  signal: NodeJS.Signals;
  hardSignal: NodeJS.Signals;
  graceMs: number;
  logger: RuntimeLogger;
}): Promise<void> {
  if (!ownedBy(o.ownerFile, o.token)) {
    // Someone else (the service) is responsible now: leave the server running, drop our pipes.
    o.own?.stdout?.destroy();
    o.own?.stderr?.destroy();
    o.own?.unref();
    return;
  }
  fs.rmSync(o.ownerFile, { force: true });
  if (!isAlive(o.pid)) return;
  try {
    process.kill(o.pid, o.signal);
  } catch {
    return;
  }
  const done = o.ownExit ? await settlesWithin(o.ownExit, o.graceMs) : await waitForExit(o.pid, o.graceMs);
  if (!done && isAlive(o.pid)) {
    o.logger.warn(`embedded ${o.name} did not stop within ${o.graceMs / 1000} s: sending ${o.hardSignal}`);
    try {
      process.kill(o.pid, o.hardSignal);
    } catch {
      // gone meanwhile
    }
    await waitForExit(o.pid, 5_000);
  }
  o.logger.info(`embedded ${o.name} stopped`);
}

/** Waits until a process is gone; false on timeout. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (!isAlive(pid)) return true;
    await sleep(100);
  }
  return !isAlive(pid);
}

/** Keeps the last few lines a child printed, for error messages. */
export class OutputTail {
  private lines: string[] = [];
  constructor(private readonly max = 20) {}
  push(chunk: string): string[] {
    const fresh = chunk.split(/\r?\n/).filter((l) => l.trim() !== '');
    this.lines.push(...fresh);
    if (this.lines.length > this.max) this.lines = this.lines.slice(-this.max);
    return fresh;
  }
  text(): string {
    return this.lines.join(' | ');
  }
}
