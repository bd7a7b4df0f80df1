import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Queue, Worker } from 'bullmq';
import type { UpstreamFailure } from '../providers/provider.types';
import { waitingByClass, type WorkClass } from '../queue/fairness';
import { queueClient } from '../queue/claims';
import { storedTokenCounts } from '../formats/format-utils';
import { Decimal, money, type MoneyLike } from '../money';

/**
 * Rubles in /metrics, exact. prom-client's counters add floats (0.10703999999999998 after a few charges), so a money
 * counter keeps its running totals as Decimals, per label set, and shows each rounded to the kopeck at scrape time:
 * the rounding never accumulates, and a total only ever rounds up as it grows. Under `npm start`'s cluster the
 * processes' totals are summed exactly too (`sumMoneyExactly`, cluster-metrics.ts).
 *
 * A money counter's name ends in `_rub_total` (one rule: that is how the cluster's sum finds them).
 */
export const isMoneyMetric = (name: string): boolean => name.endsWith('_rub_total');

/** RUB shown in /metrics: the exact amount rounded to the kopeck (half up), as a number. */
export function kopecks(amount: Decimal): number {
  return Number(amount.toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2));
}

type Labels<L extends string> = Partial<Record<L, string>>;

/** One label set's key, whatever the order its labels were given in. */
export const labelKey = (labels: object): string => JSON.stringify(Object.entries(labels).sort(([x], [y]) => (x < y ? -1 : 1)));

export class MoneyCounter<L extends string = never> {
  private readonly totals = new Map<string, { labels: Labels<L>; total: Decimal }>();

  constructor(config: { name: string; help: string; labelNames?: readonly L[]; registers: Registry[] }) {
    if (!isMoneyMetric(config.name)) throw new Error(`a money counter's name ends in _rub_total: ${config.name}`);
    const totals = this.totals;
    new Counter<L>({
      name: config.name,
      help: config.help,
      labelNames: config.labelNames ?? [],
      registers: config.registers,
      collect() {
        this.reset();
        for (const t of totals.values()) this.inc(t.labels, kopecks(t.total));
      },
    });
  }

  /** Adds an amount (a Decimal or a decimal string; nothing for zero or less). */
  inc(labels: Labels<L>, amount: MoneyLike): void {
    const a = money(amount);
    if (!a.greaterThan(0)) return;
    const key = labelKey(labels);
    const t = this.totals.get(key);
    if (t) t.total = t.total.plus(a);
    else this.totals.set(key, { labels: { ...labels }, total: a });
  }

  /** The exact running total of one label set (0 when none). */
  total(labels: Labels<L> = {}): Decimal {
    return this.totals.get(labelKey(labels))?.total ?? money(0);
  }
}

/** Queue states exported as `switchyard_queue_jobs{state}` (decisions.md section 1). */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

export type JobOutcome = 'completed' | 'failed';
/** Attempt outcomes: `ok` or the upstream failure reason (a small, fixed set: safe as a label). */
export type ProviderOutcome = 'ok' | UpstreamFailure['reason'] | 'unavailable' | 'cancelled';

/**
 * The service's Prometheus metrics, each app (and each worker process) with its own Registry: several apps
 * run in one test process, so nothing lives in prom-client's global default registry.
 */
export interface Metrics {
  registry: Registry;
  /** What GET /metrics answers: this registry, or under `npm start`'s cluster the whole machine's (cluster-metrics.ts). */
  scrape(): Promise<string>;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  queueJobs: Gauge<'queue' | 'state'>;
  /** Jobs waiting per queue and class (fair queues: shared/queue/fairness.ts). */
  queueWaiting: Gauge<'queue' | 'class'>;
  /** Seconds the oldest waiting job of each queue has waited: the latency signal for autoscaling and alerts. */
  oldestWaiting: Gauge<'queue'>;
  jobDuration: Histogram<'queue' | 'outcome'>;
  /** `inc({ provider, outcome })` with outcome a ProviderOutcome. */
  providerAttempts: Counter<'provider' | 'outcome'>;
  /** Seconds of each provider attempt, by provider, catalog endpoint (its slug, a bounded set) and outcome. */
  providerLatency: Histogram<'provider' | 'endpoint' | 'outcome'>;
  /** RUB reserved (exact, shown to the kopeck: `MoneyCounter`). */
  moneyReserved: MoneyCounter;
  /** `inc({ model }, amount)`: RUB charged, by the catalog model id (a bounded set). */
  moneyCharged: MoneyCounter<'model'>;
  /** Tokens of settled generations, by catalog model and `type` (`input`, `output`: the GenAI conventions' token types). */
  tokens: Counter<'model' | 'type'>;
  /** Generations the reaper had to fail because no job would ever end them (stuck). */
  generationsReaped: Counter<string>;
  /**
   * RUB a media generation cost beyond its reservation (the provider produced more than the endpoint's catalog
   * `maxDurationSeconds`): not charged, by provider. The generation's `routing.overrun` holds the details.
   */
  mediaUncharged: MoneyCounter<'provider'>;
  /** Lines of batches answered, by `completed` (output file), `failed` (error file) or `expired` (error file, batch_expired). */
  batchLines: Counter<'status'>;
  /** Queues whose depth is read on every scrape (`queue.getJobCounts`); the API and the worker both may call it. */
  trackQueues(queues: Iterable<Queue> | Record<string, Queue>): void;
}

export interface MetricsOptions {
  /** Per-queue budget for `getJobCounts` on a scrape, so a slow Redis never hangs /metrics. */
  queueTimeoutMs?: number;
  /** Also export Node's process metrics (CPU, memory, event loop lag) with the `switchyard_` prefix. */
  processMetrics?: boolean;
  /** How a scrape reads the registry (default: `registry.metrics()`; a process of the cluster: clusterScrape). */
  scrape?: (registry: Registry) => () => Promise<string>;
}

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);
}

export function createMetrics(opts: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const timeoutMs = opts.queueTimeoutMs ?? 1000;
  const tracked = new Map<string, Queue>();
  const registers = [registry];

  const queueJobs = new Gauge<'queue' | 'state'>({
    name: 'switchyard_queue_jobs',
    help: 'Jobs per queue and state (waiting includes prioritized), read from Redis at scrape time',
    labelNames: ['queue', 'state'],
    registers,
    aggregator: 'max', // every process reads the same Redis: summed across npm start's processes it would multiply
    async collect() {
      // Reset first: a queue whose count could not be read this time is absent rather than stale.
      this.reset();
      await Promise.all(
        [...tracked.values()].map(async (q) => {
          try {
            const c = await within(q.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'), timeoutMs);
            const values: Record<QueueState, number> = {
              waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
              active: c.active ?? 0,
              delayed: c.delayed ?? 0,
              failed: c.failed ?? 0,
            };
            for (const state of QUEUE_STATES) this.set({ queue: q.name, state }, values[state]);
          } catch {
            // Redis away or slow: leave this queue out of this scrape.
          }
        }),
      );
    },
  });

  const oldestWaiting = new Gauge<'queue'>({
    name: 'switchyard_queue_oldest_waiting_seconds',
    help: 'Age of the oldest job waiting in each queue (0 when none waits), read from Redis at scrape time',
    labelNames: ['queue'],
    registers,
    aggregator: 'max',
    async collect() {
      this.reset();
      const now = Date.now();
      await Promise.all(
        [...tracked.values()].map(async (q) => {
          try {
            // The wait list's oldest job is its last element; prioritized jobs are a set: its first by order.
            const [wait, prioritized] = await within(Promise.all([q.getJobs(['wait'], 0, 0, true), q.getJobs(['prioritized'], 0, 0, true)]), timeoutMs);
            const stamps = [...wait, ...prioritized].map((j) => j?.timestamp).filter((t): t is number => typeof t === 'number');
            this.set({ queue: q.name }, stamps.length ? Math.max(0, (now - Math.min(...stamps)) / 1000) : 0);
          } catch {
            // Redis away or slow: leave this queue out of this scrape.
          }
        }),
      );
    },
  });

  const queueWaiting = new Gauge<'queue' | 'class'>({
    name: 'switchyard_queue_waiting',
    help: 'Jobs waiting per queue and class (interactive: sync and stream; background: async, batch), read from Redis at scrape time',
    labelNames: ['queue', 'class'],
    registers,
    aggregator: 'max',
    async collect() {
      this.reset();
      await Promise.all(
        [...tracked.values()].map(async (q) => {
          try {
            const w = await within(queueClient(q).then((c) => waitingByClass(c, q)), timeoutMs);
            for (const c of Object.keys(w) as WorkClass[]) this.set({ queue: q.name, class: c }, w[c]);
          } catch {
            // Redis away or slow: leave this queue out of this scrape.
          }
        }),
      );
    },
  });

  const metrics: Metrics = {
    registry,
    scrape: opts.scrape ? opts.scrape(registry) : () => registry.metrics(),
    httpRequests: new Counter({
      name: 'switchyard_http_requests_total',
      help: 'HTTP requests by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    }),
    httpDuration: new Histogram({
      name: 'switchyard_http_request_duration_seconds',
      help: 'HTTP request latency by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }),
    queueJobs,
    queueWaiting,
    oldestWaiting,
    jobDuration: new Histogram({
      name: 'switchyard_job_duration_seconds',
      help: 'Time a worker spent on a job, by queue and outcome',
      labelNames: ['queue', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    }),
    providerAttempts: new Counter({
      name: 'switchyard_provider_attempts_total',
      help: 'Upstream attempts by provider and outcome',
      labelNames: ['provider', 'outcome'],
      registers,
    }),
    providerLatency: new Histogram({
      name: 'switchyard_provider_latency_seconds',
      help: 'Duration of upstream attempts by provider, catalog endpoint and outcome (a stream: until its last chunk)',
      labelNames: ['provider', 'endpoint', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    }),
    moneyReserved: new MoneyCounter({ name: 'switchyard_money_reserved_rub_total', help: 'RUB reserved before jobs were queued (exact, to the kopeck)', registers }),
    moneyCharged: new MoneyCounter({ name: 'switchyard_money_charged_rub_total', help: 'RUB charged on settlement, by model (exact, to the kopeck)', labelNames: ['model'], registers }),
    tokens: new Counter({ name: 'switchyard_tokens_total', help: 'Tokens of settled generations, by model and type (input, output)', labelNames: ['model', 'type'], registers }),
    generationsReaped: new Counter({
      name: 'switchyard_generations_reaped_total',
      help: 'Generations failed by the stuck-generation reaper (pending/processing with no live job)',
      registers,
    }),
    mediaUncharged: new MoneyCounter({
      name: 'switchyard_media_uncharged_rub_total',
      help: 'RUB of media output beyond the reserved upper bound (provider exceeded the catalog maxDurationSeconds), not charged (exact, to the kopeck)',
      labelNames: ['provider'],
      registers,
    }),
    batchLines: new Counter({ name: 'switchyard_batch_lines_total', help: 'Batch lines answered, by status (completed, failed, expired)', labelNames: ['status'], registers }),
    trackQueues(queues) {
      const list = Symbol.iterator in queues ? [...(queues as Iterable<Queue>)] : Object.values(queues as Record<string, Queue>);
      for (const q of list) tracked.set(q.name, q);
    },
  };
  // Off by default: it starts an event-loop monitor per registry, which tests creating many apps do not need.
  if (opts.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'switchyard_' });
  return metrics;
}

/**
 * Records `switchyard_job_duration_seconds` for every job a BullMQ worker finishes, from the job's own
 * processedOn/finishedOn stamps: one line in the worker pool instead of timing code in every executor.
 */
export function instrumentWorker(worker: Worker, metrics: Pick<Metrics, 'jobDuration'>): void {
  for (const outcome of ['completed', 'failed'] as const) {
    worker.on(outcome, (job: { processedOn?: number; finishedOn?: number } | undefined) => {
      if (!job?.processedOn) return;
      const seconds = Math.max(0, ((job.finishedOn ?? Date.now()) - job.processedOn) / 1000);
      metrics.jobDuration.observe({ queue: worker.name, outcome }, seconds);
    });
  }
}

/** A generation's settlement (its close applied, once per generation): the RUB charged and the tokens its usage counts, by model. */
export function countSettled(metrics: Pick<Metrics, 'moneyCharged' | 'tokens'>, model: string, charged: MoneyLike, usage: unknown): void {
  metrics.moneyCharged.inc({ model }, charged);
  const { input, output } = storedTokenCounts(usage);
  if (input) metrics.tokens.inc({ model, type: 'input' }, input);
  if (output) metrics.tokens.inc({ model, type: 'output' }, output);
}
