"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.startWorkers = startWorkers;
const bootstrap_1 = require("../shared/runtime/bootstrap");
const worker_deps_1 = require("./worker-deps");
const metrics_server_1 = require("../shared/metrics/metrics-server");
const bullmq_1 = require("bullmq");
const queue_names_1 = require("../shared/queue/queue-names");
const maintenance_processor_1 = require("./processors/maintenance.processor");
const reap_stuck_generations_processor_1 = require("./processors/reap-stuck-generations.processor");
const worker_pool_1 = require("./worker-pool");
/** Starts one BullMQ worker per queue on a bootstrapped runtime. */
async function startWorkers(rt) {
    const deps = (0, worker_deps_1.buildWorkerDeps)({ config: rt.config, db: rt.db, pool: rt.pool, redis: rt.redis, catalog: rt.catalog, logger: rt.logger, upstream: rt.upstream, secret: rt.secret, metrics: rt.metrics });
    const connection = rt.patient('worker');
    const pool = (0, worker_pool_1.startWorkerPool)(deps, connection);
    await pool.ready();
    // The retention job (expired files) repeats every 15 minutes; installing it again on every start is harmless.
    const maintenance = new bullmq_1.Queue(queue_names_1.QUEUES.maintenance, { connection, prefix: rt.config.queuePrefix });
    await (0, maintenance_processor_1.scheduleMaintenance)(maintenance);
    await (0, reap_stuck_generations_processor_1.scheduleReaper)(maintenance, rt.config.reaper); // fails and releases generations whose job was lost (docs/faults.md)
    await maintenance.close();
    rt.logger.info(`workers serving ${pool.workers.map((w) => `${w.name}×${w.opts.concurrency}`).join(', ')}`);
    return pool;
}
if (require.main === module) {
    (0, bootstrap_1.bootstrap)('worker')
        .then(async (rt) => {
        const pool = await startWorkers(rt);
        rt.onClose(() => pool.close());
        // A worker-only process exposes its own /metrics (job durations, provider attempts, money charged).
        // A second worker on the same host finds the port taken: it logs that and runs on without its own endpoint.
        const port = rt.config.worker.metricsPort;
        await (0, metrics_server_1.startMetricsServer)(rt.metrics.registry, port, { token: rt.config.metricsToken }).then((m) => rt.onClose(() => m.close()), (e) => rt.logger.warn(`worker metrics endpoint not started on port ${port}: ${e.message} (set WORKER_METRICS_PORT per process)`));
        (0, bootstrap_1.onShutdown)(rt.logger, () => rt.close(), rt.config.shutdownTimeoutMs);
    })
        .catch((e) => {
        console.error(e.message);
        process.exit(1);
    });
}
