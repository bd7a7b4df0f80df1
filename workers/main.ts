import { bootstrap, onShutdown, type Runtime } from '../shared/runtime/bootstrap';
import { buildWorkerDeps } from './worker-deps';
import { startMetricsServer, type MetricsServer } from '../shared/metrics/metrics-server';
import { Queue } from 'bullmq';
import { QUEUE_NAMES } from '../shared/queue/queue-names';
import { keepMaintenanceScheduled } from './schedules';
import { startWorkerPool, type WorkerPool } from './worker-pool';

/** Starts one BullMQ worker per queue on a bootstrapped runtime. */
export async function startWorkers(rt: Runtime): Promise<WorkerPool> {
  const connection = rt.patient('worker');
  const deps = buildWorkerDeps({ config: rt.config, db: rt.db, pool: rt.pool, redis: rt.redis, catalog: rt.catalog, logger: rt.logger, upstream: rt.upstream, secret: rt.secret, metrics: rt.metrics, ledger: rt.ledger, lane: rt.lane, tracing: rt.tracing, jobConnection: connection });
  const pool = startWorkerPool(deps, connection);
  await pool.ready();
  // The reaper (stuck generations, expired leases) and the sweep of expired files, installed again whenever Redis comes
  // back without them (workers/schedules.ts); the pool stops first (rt.onClose runs the latest first).
  const schedules = await keepMaintenanceScheduled(rt.redis, rt.config, rt.logger);
  rt.onClose(() => schedules.close());
  rt.logger.info(`workers serving ${pool.workers.map((w) => `${w.name}×${w.opts.concurrency}`).join(', ')}`);
  return pool;
}

/**
 * A worker-only process's own /metrics: job durations, provider attempts, money charged, and the queue depth too, so
 * an autoscaler scraping worker pods sees the backlog it scales on (deploy/README.md). A second worker on the same
 * host finds the port taken: it logs that and runs on without its own endpoint (null).
 */
export async function serveWorkerMetrics(rt: Pick<Runtime, 'redis' | 'config' | 'metrics' | 'logger' | 'onClose'>, host?: string): Promise<MetricsServer | null> {
  const depth = QUEUE_NAMES.map((name) => new Queue(name, { connection: rt.redis, prefix: rt.config.queuePrefix }));
  rt.metrics.trackQueues(depth);
  rt.onClose(async () => void (await Promise.all(depth.map((q) => q.close()))));
  const port = rt.config.worker.metricsPort;
  try {
    const server = await startMetricsServer(rt.metrics.registry, port, { token: rt.config.metricsToken, host });
    rt.onClose(() => server.close());
    return server;
  } catch (e) {
    rt.logger.warn(`worker metrics endpoint not started on port ${port}: ${(e as Error).message} (set WORKER_METRICS_PORT per process)`);
    return null;
  }
}

if (require.main === module) {
  bootstrap('worker')
    .then(async (rt) => {
      const pool = await startWorkers(rt);
      rt.onClose(() => pool.close());
      await serveWorkerMetrics(rt);
      onShutdown(rt.logger, () => rt.close(), rt.config.shutdownTimeoutMs);
    })
    .catch((e: Error) => {
      console.error(e.message);
      process.exit(1);
    });
}
