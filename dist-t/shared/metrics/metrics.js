"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.QUEUE_STATES = void 0;
exports.createMetrics = createMetrics;
exports.instrumentWorker = instrumentWorker;
exports.rub = rub;
const prom_client_1 = require("prom-client");
/** Queue states exported as `switchyard_queue_jobs{state}` (decisions.md section 1). */
exports.QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'];
function within(p, ms) {
    return Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);
}
function createMetrics(opts = {}) {
    const registry = new prom_client_1.Registry();
    const timeoutMs = opts.queueTimeoutMs ?? 1000;
    const tracked = new Map();
    const registers = [registry];
    const queueJobs = new prom_client_1.Gauge({
        name: 'switchyard_queue_jobs',
        help: 'Jobs per queue and state (waiting includes prioritized), read from Redis at scrape time',
        labelNames: ['queue', 'state'],
        registers,
        async collect() {
            // Reset first: a queue whose count could not be read this time is absent rather than stale.
            this.reset();
            await Promise.all([...tracked.values()].map(async (q) => {
                try {
                    const c = await within(q.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'), timeoutMs);
                    const values = {
                        waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
                        active: c.active ?? 0,
                        delayed: c.delayed ?? 0,
                        failed: c.failed ?? 0,
                    };
                    for (const state of exports.QUEUE_STATES)
                        this.set({ queue: q.name, state }, values[state]);
                }
                catch {
                    // Redis away or slow: leave this queue out of this scrape.
                }
            }));
        },
    });
    const oldestWaiting = new prom_client_1.Gauge({
        name: 'switchyard_queue_oldest_waiting_seconds',
        help: 'Age of the oldest job waiting in each queue (0 when none waits), read from Redis at scrape time',
        labelNames: ['queue'],
        registers,
        async collect() {
            this.reset();
            const now = Date.now();
            await Promise.all([...tracked.values()].map(async (q) => {
                try {
                    // The wait list's oldest job is its last element; prioritized jobs are a set: its first by order.
                    const [wait, prioritized] = await within(Promise.all([q.getJobs(['wait'], 0, 0, true), q.getJobs(['prioritized'], 0, 0, true)]), timeoutMs);
                    const stamps = [...wait, ...prioritized].map((j) => j?.timestamp).filter((t) => typeof t === 'number');
                    this.set({ queue: q.name }, stamps.length ? Math.max(0, (now - Math.min(...stamps)) / 1000) : 0);
                }
                catch {
                    // Redis away or slow: leave this queue out of this scrape.
                }
            }));
        },
    });
    const metrics = {
        registry,
        httpRequests: new prom_client_1.Counter({
            name: 'switchyard_http_requests_total',
            help: 'HTTP requests by method, route pattern and status',
            labelNames: ['method', 'route', 'status'],
            registers,
        }),
        httpDuration: new prom_client_1.Histogram({
            name: 'switchyard_http_request_duration_seconds',
            help: 'HTTP request latency by method, route pattern and status',
            labelNames: ['method', 'route', 'status'],
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
            registers,
        }),
        queueJobs,
        oldestWaiting,
        jobDuration: new prom_client_1.Histogram({
            name: 'switchyard_job_duration_seconds',
            help: 'Time a worker spent on a job, by queue and outcome',
            labelNames: ['queue', 'outcome'],
            buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
            registers,
        }),
        providerAttempts: new prom_client_1.Counter({
            name: 'switchyard_provider_attempts_total',
            help: 'Upstream attempts by provider and outcome',
            labelNames: ['provider', 'outcome'],
            registers,
        }),
        moneyReserved: new prom_client_1.Counter({ name: 'switchyard_money_reserved_rub_total', help: 'RUB reserved before jobs were queued', registers }),
        moneyCharged: new prom_client_1.Counter({ name: 'switchyard_money_charged_rub_total', help: 'RUB charged on settlement, by model', labelNames: ['model'], registers }),
        generationsReaped: new prom_client_1.Counter({
            name: 'switchyard_generations_reaped_total',
            help: 'Generations failed by the stuck-generation reaper (pending/processing with no live job)',
            registers,
        }),
        mediaUncharged: new prom_client_1.Counter({
            name: 'switchyard_media_uncharged_rub_total',
            help: 'RUB of media output beyond the reserved upper bound (provider exceeded the catalog maxDurationSeconds), not charged',
            labelNames: ['provider'],
            registers,
        }),
        trackQueues(queues) {
            const list = Symbol.iterator in queues ? [...queues] : Object.values(queues);
            for (const q of list)
                tracked.set(q.name, q);
        },
    };
    // Off by default: it starts an event-loop monitor per registry, which tests creating many apps do not need.
    if (opts.processMetrics)
        (0, prom_client_1.collectDefaultMetrics)({ register: registry, prefix: 'switchyard_' });
    return metrics;
}
/**
 * Records `switchyard_job_duration_seconds` for every job a BullMQ worker finishes, from the job's own
 * processedOn/finishedOn stamps: one line in the worker pool instead of timing code in every executor.
 */
function instrumentWorker(worker, metrics) {
    const observe = (job, outcome) => {
        if (!job?.processedOn)
            return;
        const seconds = Math.max(0, ((job.finishedOn ?? Date.now()) - job.processedOn) / 1000);
        metrics.jobDuration.observe({ queue: worker.name, outcome }, seconds);
    };
    worker.on('completed', (job) => observe(job, 'completed'));
    worker.on('failed', (job) => observe(job, 'failed'));
}
/** Money helper: counters take numbers; our money is decimal strings or Prisma Decimals. */
function rub(amount) {
    const n = Number(typeof amount === 'number' ? amount : amount.toString());
    return Number.isFinite(n) && n > 0 ? n : 0;
}
