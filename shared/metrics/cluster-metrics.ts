import cluster from 'node:cluster';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import { AppError } from '../errors/app-error';
import { Decimal } from '../money';
import { isMoneyMetric, kopecks, labelKey } from './metrics';

/**
 * /metrics under `npm start` with several processes (bin/start.ts): they share the port, so a scrape reaches one of
 * them. That one asks the primary, which asks every process that serves (it said `ready`: bin/start.ts) for its
 * registry over IPC and answers with the aggregate (prom-client's `AggregatorRegistry.aggregate`): one scrape is the
 * whole machine. Each series combines by its `aggregator` (counters and histograms sum; the queue gauges, read from
 * the one Redis by every process, take the max: shared/metrics/metrics.ts).
 *
 * A process still starting (after a crash, the replacement's first seconds) is not asked: it serves nothing yet, and
 * asking it made the scrape wait for an answer that could not come (prom-client's own gathering asks every process).
 * A serving process that does not answer in time fails the scrape (503) rather than leave its counts out: a sum that
 * drops reads as a counter reset, and a missed scrape is what Prometheus handles well. A process that exits while asked
 * is no longer waited for (its counts went with it).
 */
/** What a process of `npm start` tells the parent once it serves (bin/start.ts): from then on a scrape asks it. */
export const PROCESS_READY = 'ready';
const ASK = 'switchyard:cluster-metrics?';
const ANSWER = 'switchyard:cluster-metrics';
const ASK_PART = 'switchyard:process-metrics?';
const PART = 'switchyard:process-metrics';

interface Ask {
  type: typeof ASK;
  id: number;
}
interface Answer {
  type: typeof ANSWER;
  id: number;
  body?: string;
  error?: string;
}
interface AskPart {
  type: typeof ASK_PART;
  id: number;
}
interface Part {
  type: typeof PART;
  id: number;
  metrics?: MetricObjectWithValues<MetricValue<string>>[];
  error?: string;
}

/**
 * The machine's registry from its processes' metrics: each series combined by its `aggregator`, money summed exactly
 * (metrics.ts `MoneyCounter`: prom-client's sum of 0.1 and 0.2 is 0.30000000000000004).
 */
export function aggregateProcesses(parts: MetricObjectWithValues<MetricValue<string>>[][]): Registry {
  return AggregatorRegistry.aggregate(sumMoneyExactly(parts));
}

/** In the primary, before it forks: answers each process's ask with the aggregate of the serving processes. */
export function serveClusterMetrics(timeoutMs = 5000): void {
  /** The processes that said `ready`: they serve requests, so a scrape counts them. */
  const serving = new Set<number>();
  /** Gatherings in flight, by id: the processes still to answer, and what has arrived. */
  const gatherings = new Map<number, { waiting: Set<number>; parts: NonNullable<Part['metrics']>[]; end(error?: string): void }>();
  let next = 0;

  const gather = (asker: number): Promise<string> =>
    new Promise((resolve, reject) => {
      const id = next++;
      const targets = new Set([...serving, asker].filter((w) => cluster.workers?.[w]?.isConnected()));
      const timer = setTimeout(() => g.end(`process(es) ${[...g.waiting].map((w) => cluster.workers?.[w]?.process.pid ?? w).join(', ')} did not answer within ${timeoutMs} ms`), timeoutMs);
      const g = {
        waiting: targets,
        parts: [] as NonNullable<Part['metrics']>[],
        end(error?: string) {
          if (!gatherings.delete(id)) return;
          clearTimeout(timer);
          if (error) return reject(new Error(error));
          try {
            resolve(aggregateProcesses(g.parts).metrics());
          } catch (e) {
            reject(e as Error);
          }
        },
      };
      gatherings.set(id, g);
      for (const w of targets) cluster.workers![w]!.send({ type: ASK_PART, id } satisfies AskPart, undefined, () => undefined);
      if (targets.size === 0) g.end();
    });

  const arrived = (worker: number, m: Part) => {
    const g = gatherings.get(m.id);
    if (!g || !g.waiting.delete(worker)) return;
    if (m.error !== undefined) return g.end(`process ${worker}: ${m.error}`);
    g.parts.push(m.metrics ?? []);
    if (g.waiting.size === 0) g.end();
  };

  cluster.on('exit', (worker) => {
    serving.delete(worker.id);
    for (const g of gatherings.values()) if (g.waiting.delete(worker.id) && g.waiting.size === 0) g.end();
  });
  cluster.on('message', (worker, m: unknown) => {
    if (m === PROCESS_READY) return void serving.add(worker.id);
    const msg = m as Partial<Ask | Part> | null;
    if (msg?.type === PART && typeof msg.id === 'number') return arrived(worker.id, msg as Part);
    if (msg?.type !== ASK || typeof msg.id !== 'number') return;
    const reply = (answer: Answer) => worker.isConnected() && worker.send(answer, undefined, () => undefined); // gone meanwhile: nobody to answer
    gather(worker.id).then(
      (body) => reply({ type: ANSWER, id: msg.id!, body }),
      (e: Error) => reply({ type: ANSWER, id: msg.id!, error: e.message }),
    );
  });
}

/**
 * In a process the primary forked: answers the primary's asks with `registry`'s metrics and returns the scrape of the
 * whole machine. Outside a cluster, the registry's own.
 */
export function clusterScrape(registry: Registry, timeoutMs = 8000): () => Promise<string> {
  if (!cluster.isWorker || !process.send) return () => registry.metrics();
  const pending = new Map<number, { resolve(body: string): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  let next = 0;
  const unavailable = (why: string) => new AppError('SERVICE_UNAVAILABLE', `The metrics of npm start's processes could not be gathered (${why}): scrape again`);
  process.on('message', (m: Partial<Answer | AskPart> | null) => {
    if (m?.type === ASK_PART && typeof m.id === 'number') {
      const id = m.id;
      registry.getMetricsAsJSON().then(
        (metrics) => process.send!({ type: PART, id, metrics } satisfies Part, undefined, {}, () => undefined),
        (e: Error) => process.send!({ type: PART, id, error: e.message } satisfies Part, undefined, {}, () => undefined),
      );
      return;
    }
    const waiting = m?.type === ANSWER && typeof m.id === 'number' ? pending.get(m.id) : undefined;
    if (!waiting) return;
    const answer = m as Answer;
    pending.delete(answer.id);
    clearTimeout(waiting.timer);
    if (typeof answer.body === 'string') waiting.resolve(answer.body);
    else waiting.reject(unavailable(answer.error ?? 'no answer'));
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      // The primary gives up on a silent process after 5 s and answers with an error: this is the backstop.
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(unavailable(`the primary did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      pending.set(id, { resolve, reject, timer });
      process.send!({ type: ASK, id } satisfies Ask);
    });
}

type MetricJson = MetricObjectWithValues<MetricValue<string>>;

/**
 * The processes' metrics (each a registry's `getMetricsAsJSON()`) with every money series summed exactly: each
 * process's kopeck value is read as the decimal it prints as, and the sum of each label set goes to the first process
 * alone, so prom-client's aggregation (a float sum) adds it to nothing.
 */
export function sumMoneyExactly(parts: MetricJson[][]): MetricJson[][] {
  const sums = new Map<string, { metric: MetricJson; values: Map<string, { labels: MetricValue<string>['labels']; total: Decimal }> }>();
  const rest = parts.map((metrics) =>
    metrics.filter((m) => {
      if (!isMoneyMetric(m.name)) return true;
      let s = sums.get(m.name);
      if (!s) sums.set(m.name, (s = { metric: m, values: new Map() }));
      for (const v of m.values) {
        const key = labelKey(v.labels);
        const seen = s.values.get(key);
        if (seen) seen.total = seen.total.plus(String(v.value));
        else s.values.set(key, { labels: v.labels, total: new Decimal(String(v.value)) });
      }
      return false;
    }),
  );
  if (rest.length === 0) return rest;
  const exact = [...sums.values()].map(({ metric, values }) => ({ ...metric, values: [...values.values()].map((v) => ({ labels: v.labels, value: kopecks(v.total) })) }));
  return [[...rest[0], ...exact], ...rest.slice(1)];
}
