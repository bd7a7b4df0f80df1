import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * /metrics under `npm start` with several processes (bin/start.ts): they share the port, so a scrape reaches one of
 * them. That one asks the primary, which gathers every process's registry over IPC (prom-client's
 * AggregatorRegistry) and answers with the aggregate: one scrape is the whole machine. Each series combines by its
 * `aggregator` (counters and histograms sum; the queue gauges, read from the one Redis by every process, take the
 * max: shared/metrics/metrics.ts).
 */
const ASK = 'switchyard:cluster-metrics?';
const ANSWER = 'switchyard:cluster-metrics';

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

/** In the primary, before it forks: answers each process's ask with the aggregate of all of them. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, m: Partial<Ask> | null) => {
    if (m?.type !== ASK || typeof m.id !== 'number') return;
    const reply = (answer: Answer) => worker.isConnected() && worker.send(answer, undefined, () => undefined); // gone meanwhile: nobody to answer
    aggregator.clusterMetrics().then(
      (body) => reply({ type: ANSWER, id: m.id!, body }),
      (e: Error) => reply({ type: ANSWER, id: m.id!, error: e.message }),
    );
  });
}

/**
 * In a process the primary forked: offers `registry` to the primary's aggregation and returns the scrape of the
 * whole machine. Outside a cluster, the registry's own. prom-client answers the primary from one set of registries
 * per process (AggregatorRegistry.setRegistries): a process of `npm start` has one runtime, so one registry.
 */
export function clusterScrape(registry: Registry, timeoutMs = 8000): () => Promise<string> {
  if (!cluster.isWorker || !process.send) return () => registry.metrics();
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry(); // its constructor installs the listener that answers the primary's requests
  const pending = new Map<number, { resolve(body: string): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  let next = 0;
  process.on('message', (m: Partial<Answer> | null) => {
    const waiting = m?.type === ANSWER && typeof m.id === 'number' ? pending.get(m.id) : undefined;
    if (!waiting) return;
    pending.delete(m!.id!);
    clearTimeout(waiting.timer);
    if (typeof m!.body === 'string') waiting.resolve(m!.body);
    else waiting.reject(new Error(`cluster metrics: ${m!.error ?? 'no answer'}`));
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      // prom-client's primary gives up on a silent process after 5 s and answers with an error: this is the backstop.
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`cluster metrics: the primary did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      pending.set(id, { resolve, reject, timer });
      process.send!({ type: ASK, id } satisfies Ask);
    });
}
