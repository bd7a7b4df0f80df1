import cluster from 'node:cluster';
import os from 'node:os';
import { bootstrap, onShutdown } from '../shared/runtime/bootstrap';
import { startWeb } from '../api/main';
import { startWorkers } from '../workers/main';
import { loadConfig, type Config } from '../shared/config/env';
import { createLogger } from '../shared/logger';
import { resolveServices } from '../shared/runtime/services';
import { resolveSecret } from '../shared/runtime/secret';
import { PROCESS_READY, serveClusterMetrics } from '../shared/metrics/cluster-metrics';
import { startDemoProviders } from '../shared/runtime/demo-providers';

/**
 * `npm start`: API and workers, with embedded PostgreSQL and Redis unless DATABASE_URL and REDIS_URL are set
 * (decisions.md section 1). `--demo` adds the fake providers and the demo catalog.
 *
 * It uses the machine's cores: `WEB_CONCURRENCY` processes (default: the core count), each serving the API and
 * the workers, share the port (node:cluster). The parent starts the embedded PostgreSQL and Redis once, applies
 * the migrations and settles the secret, then starts the processes on those URLs; it restarts one that dies and
 * stops them all on SIGTERM. `/metrics`, whichever process takes the scrape, answers with all the processes' series
 * aggregated by the parent. In demo mode the parent also runs the one set of fake providers the processes call.
 * `WEB_CONCURRENCY=1` (the default in demo mode) runs everything in this one process.
 * On SIGTERM the API stops taking requests and finishes those in flight, then the workers finish their jobs.
 */
const CHILD = 'SWITCHYARD_CLUSTER_CHILD';

/** How many processes `npm start` runs: WEB_CONCURRENCY, else the cores this process may use (1 in demo mode). */
export function processCount(config: Config): number {
  return config.webConcurrency ?? (config.demo ? 1 : os.availableParallelism());
}

function startOne(): void {
  bootstrap('all')
    .then(async (rt) => {
      const pool = await startWorkers(rt);
      const web = await startWeb(rt);
      rt.onClose(() => pool.close());
      rt.onClose(() => web.close()); // runs first: stop taking requests before the workers stop
      onShutdown(rt.logger, () => rt.close(), rt.config.shutdownTimeoutMs);
      process.send?.(PROCESS_READY);
    })
    .catch((e: Error) => {
      console.error(e.message);
      process.exit(1);
    });
}

async function startCluster(config: Config, n: number): Promise<void> {
  const logger = createLogger({ level: config.logLevel, service: 'switchyard-start' });
  const services = await resolveServices(config, logger);
  const env: Record<string, string> = { [CHILD]: '1', DATABASE_URL: services.databaseUrl, REDIS_URL: services.redisUrl, SWITCHYARD_SECRET: resolveSecret(config) };
  // Demo mode: one set of fake providers, here, for every process (each starting its own on the shared port split the
  // calls between sets whose knobs, files and batches differed).
  const demo = config.demo ? await startDemoProviders(config, logger) : undefined;
  if (demo) env.DEMO_PROVIDER_PORT = String(demo.port);
  // PostgreSQL takes 100 connections by default: the processes share 80 unless DATABASE_POOL_SIZE says otherwise.
  if (!config.databasePoolSizeSet) env.DATABASE_POOL_SIZE = String(Math.max(4, Math.min(20, Math.floor(80 / n))));
  let stopping = false;
  let ready = 0;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    const alive = Object.values(cluster.workers ?? {}).filter((w) => w && !w.isDead());
    await Promise.all(alive.map((w) => new Promise((done) => (w!.once('exit', done), w!.process.kill('SIGTERM')))));
    await demo?.close();
    await services.stop();
    process.exit(code);
  };
  const fork = () => {
    const w = cluster.fork(env);
    let up = false;
    w.on('message', (m) => {
      if (m !== PROCESS_READY || up) return;
      up = true;
      if (++ready === n) logger.info(`${n} processes serve the API and the workers`);
    });
    w.once('exit', (code, signal) => {
      if (stopping) return;
      // One that never came up (a refused catalog, a taken port) would fail again: stop with its error.
      if (!up) return void stopAll(1);
      logger.error(`process ${w.process.pid} exited (${signal ?? code}); starting another in 1 s`);
      setTimeout(() => stopping || fork(), 1000); // a process that keeps dying does not spin the machine
    });
  };
  // Each process accepts its own connections from the shared socket. node:cluster's default (round robin) has the
  // parent accept and hand each connection to a process, keeping its copy until that process says it took it: a
  // process killed with a connection on its way left that connection open and unanswered (fault case 13b).
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  serveClusterMetrics(); // a scrape of any process answers for all of them
  for (let i = 0; i < n; i++) fork();
  for (const s of ['SIGTERM', 'SIGINT'] as const) process.once(s, () => void stopAll(0));
}

function main(): void {
  const config = loadConfig(process.env, process.argv);
  const n = cluster.isPrimary && !config.clusterChild ? processCount(config) : 1;
  if (n <= 1) return startOne();
  startCluster(config, n).catch((e: Error) => {
    console.error(e.message);
    process.exit(1);
  });
}

try {
  main();
} catch (e) {
  console.error((e as Error).message); // a bad setting: its message names the variable
  process.exit(1);
}
