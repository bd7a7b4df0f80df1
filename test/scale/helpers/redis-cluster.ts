/**
 * A real Redis Cluster for the scale suite: six `redis-server --cluster-enabled yes` on loopback ports
 * (3 masters, 3 replicas), joined with `redis-cli --cluster create … --cluster-replicas 1`. No persistence;
 * a short node timeout (1 s) so a killed master's replica takes over within a few seconds.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { isPortFree } from '../../../shared/runtime/process-utils';
import { waitFor } from '../../helpers/until';

const run = promisify(execFile);

export interface ClusterNode {
  port: number;
  child: ChildProcess;
  readonly running: boolean;
}

export interface RedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…` (every node a seed). */
  url: string;
  nodes: ClusterNode[];
  /** Port of the master serving a key's slot. */
  masterOf(key: string): Promise<number>;
  /** SIGKILLs one node; resolves once it is gone. */
  kill(port: number): Promise<void>;
  /** Resolves once every live node says cluster_state:ok and every slot has a live master. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Starts (or restarts, on its saved nodes.conf) one cluster node in `<dir>/<port>`. */
export function spawnNode(dir: string, port: number): ClusterNode {
  const nodeDir = path.join(dir, String(port));
  fs.mkdirSync(nodeDir, { recursive: true });
  const log = fs.openSync(path.join(nodeDir, 'redis.log'), 'a');
  // prettier-ignore
  const child = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--protected-mode', 'no', '--dir', nodeDir,
    '--pidfile', path.join(nodeDir, 'redis.pid'),
    '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '1000',
    '--cluster-replica-validity-factor', '0', '--save', '', '--appendonly', 'no',
  ], { stdio: ['ignore', log, log] });
  return {
    port,
    child,
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
  };
}

/** The live cluster's node ports and the port of the master serving a key's slot, seen from any live node. */
export async function masterOf(ports: number[], key: string): Promise<number> {
  for (const port of ports) {
    const slotText = await cli(port, 'CLUSTER', 'KEYSLOT', key).catch(() => '');
    if (!slotText.trim()) continue;
    const slot = Number(slotText.trim());
    for (const line of (await cli(port, 'CLUSTER', 'NODES')).trim().split('\n')) {
      const f = line.split(' ');
      if (!f[2]!.includes('master') || f[2]!.includes('fail')) continue;
      for (const range of f.slice(8)) {
        const [a, b] = range.split('-').map(Number);
        if (slot >= a! && slot <= (b ?? a)!) return Number(f[1]!.split(':')[1]!.split('@')[0]);
      }
    }
  }
  throw new Error(`no live master serves the slot of ${key}`);
}

/** Resolves once every node that answers says cluster_state:ok with all 16384 slots served. */
export async function waitClusterHealthy(ports: number[], timeoutMs = 30_000): Promise<void> {
  const healthy = async () => {
    const infos = (await Promise.all(ports.map((p) => cli(p, 'CLUSTER', 'INFO').catch(() => null)))).filter((i): i is string => i !== null);
    return infos.length > 0 && infos.every((i) => /cluster_state:ok/.test(i) && /cluster_slots_ok:16384/.test(i));
  };
  await waitFor('the Redis Cluster to be healthy', healthy, timeoutMs, 100).catch(() => {
    throw new Error(`the Redis Cluster did not become healthy in ${timeoutMs} ms`);
  });
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}

/** Six consecutive ports whose cluster bus ports (+10000) are free too. */
async function pickPorts(count: number): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const ports = Array.from({ length: count }, (_, i) => base + i);
    const free = await Promise.all(ports.flatMap((p) => [isPortFree(p), isPortFree(p + 10_000)]));
    if (free.every(Boolean)) return ports;
  }
  throw new Error('no free ports for the Redis Cluster');
}

export async function startRedisCluster(dir: string, opts: { masters?: number } = {}): Promise<RedisCluster> {
  const masters = opts.masters ?? 3;
  const ports = await pickPorts(masters * 2);
  const nodes: ClusterNode[] = [];
  for (const port of ports) nodes.push(spawnNode(dir, port));
  const stop = async () => {
    await Promise.all(
      nodes.map((n) => {
        if (!n.running) return Promise.resolve();
        const gone = new Promise<void>((r) => n.child.once('exit', () => r()));
        n.child.kill('SIGKILL');
        return gone;
      }),
    );
    // Nodes restarted by a test (restartNode) are not our children: stop them through their pid files.
    for (const port of ports) {
      try {
        const pid = Number(fs.readFileSync(path.join(dir, String(port), 'redis.pid'), 'utf8').trim());
        if (pid > 0) process.kill(pid, 'SIGKILL');
      } catch {
        // no pid file, or already gone
      }
    }
  };
  try {
    for (const n of nodes) {
      const answers = async () => {
        if (!n.running) throw new Error(`redis-server on ${n.port} exited; see ${dir}/${n.port}/redis.log`);
        return (await cli(n.port, 'PING').catch(() => '')).trim() === 'PONG';
      };
      await waitFor(`redis-server on ${n.port} to answer`, answers, 15_000, 50).catch((e: Error) => {
        throw n.running ? new Error(`redis-server on ${n.port} did not answer within 15 s`) : e;
      });
    }
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: 60_000 });
  } catch (e) {
    await stop();
    throw e;
  }

  const live = () => nodes.filter((n) => n.running).map((n) => n.port);
  const cluster: RedisCluster = {
    url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    nodes,
    masterOf: (key) => masterOf(live(), key),
    async kill(port) {
      const n = nodes.find((x) => x.port === port);
      if (!n || !n.running) return;
      const gone = new Promise<void>((r) => n.child.once('exit', () => r()));
      n.child.kill('SIGKILL');
      await gone;
    },
    waitHealthy: (timeoutMs) => waitClusterHealthy(live(), timeoutMs),
    stop,
  };
  await cluster.waitHealthy();
  return cluster;
}
