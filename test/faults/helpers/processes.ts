import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { portBelowEphemeral } from '../../helpers/port-below-ephemeral';
import { ROOT, type Cluster } from './cluster';
import { waitFor } from './wait';

/** The pids of a process's children, from /proc (the processes `npm start` forked through node:cluster). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** SIGKILLs a child of `parent` (a process of `npm start`) and waits until the parent has reaped it. */
export async function killChild(parent: number, pid: number): Promise<void> {
  process.kill(pid, 'SIGKILL');
  await waitFor('the killed process gone', async () => !childrenOf(parent).includes(pid), 10_000);
}

/** `npm start` running on a fault cluster's services: its parent process, the URL it serves and its log. */
/**
 * The TCP sockets of a process (its descriptors → socket inodes → /proc/net/tcp): each one's local port, and whether
 * it listens. The process behind a PostgreSQL backend is the one whose socket has the backend's `client_port`.
 */
export function tcpSocketsOf(pid: number): Array<{ port: number; listening: boolean }> {
  const inodes = new Set<string>();
  try {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return []; // the process is gone
  }
  const sockets: Array<{ port: number; listening: boolean }> = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = fs.existsSync(table) ? fs.readFileSync(table, 'utf8').trim().split('\n').slice(1) : [];
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      if (inodes.has(f[9])) sockets.push({ port: parseInt(f[1].split(':')[1], 16), listening: f[3] === '0A' });
    }
  }
  return sockets;
}

/** Whether the process listens on `port` (a process npm start forked, once it serves). */
export const listensOn = (pid: number, port: number): boolean => tcpSocketsOf(pid).some((s) => s.listening && s.port === port);

export interface NpmStart {
  parent: ChildProcess;
  /** Resolves with the parent's exit code. */
  exited: Promise<number | null>;
  url: string;
  /** The last 3,000 characters of its output (for a failing case's report). */
  tail(): string;
  /** SIGKILL to the parent and its children (a case's `finally`). */
  kill(): void;
  /** SIGTERM to the parent; its exit code, or 'timeout' when it has not exited within 30 s. */
  stop(): Promise<number | null | 'timeout'>;
}

/**
 * Starts `dist/bin/start.js` with WEB_CONCURRENCY=`processes` on the cluster's PostgreSQL, Redis and catalog (and
 * `env` over them), and waits until it answers /readyz with all its processes forked.
 */
export async function startNpmStart(c: Cluster, processes: number, env: Record<string, string> = {}): Promise<NpmStart> {
  const port = await portBelowEphemeral();
  const log = path.join(c.dir, 'start.log');
  const fd = fs.openSync(log, 'a');
  const parent = spawn(process.execPath, [path.join(ROOT, 'dist/bin/start.js')], {
    cwd: c.dir,
    env: { ...process.env, ...c.env, PORT: String(port), WEB_CONCURRENCY: String(processes), WORKER_METRICS_PORT: '0', NODE_ENV: 'production', ...env },
    stdio: ['ignore', fd, fd],
  });
  fs.closeSync(fd);
  const started: NpmStart = {
    parent,
    exited: new Promise<number | null>((r) => parent.once('exit', (code) => r(code))),
    url: `http://127.0.0.1:${port}`,
    tail: () => fs.readFileSync(log, 'utf8').slice(-3000),
    kill() {
      if (parent.exitCode === null) parent.kill('SIGKILL');
      for (const p of childrenOf(parent.pid!)) process.kill(p, 'SIGKILL');
    },
    stop() {
      parent.kill('SIGTERM');
      return Promise.race([started.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000).unref())]);
    },
  };
  // Up: every process holds the listening socket. One that does not yet (still starting on a busy machine) leaves the
  // parent's shared handle with a single owner: a case that kills that one would see the parent close the socket and
  // reset every connection waiting on it.
  const up = async () =>
    (await fetch(`${started.url}/readyz`).then((r) => r.ok, () => false)) && childrenOf(parent.pid!).filter((p) => listensOn(p, port)).length >= processes;
  await waitFor('npm start to come up', up, 60_000).catch(() => {
    started.kill();
    throw new Error(`npm start did not come up:\n${started.tail()}`);
  });
  return started;
}
