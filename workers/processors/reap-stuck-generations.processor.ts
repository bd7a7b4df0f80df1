import { Queue } from 'bullmq';
import { JOB_OPTIONS } from '../../shared/queue/job-catalog';
import { QUEUES, type QueueName } from '../../shared/queue/queue-names';
import type { WorkerDeps } from '../worker-deps';

/** Job name in the `maintenance` queue. Never rename it: the scheduler in Redis refers to it. */
export const REAP_STUCK_GENERATIONS = 'reap-stuck-generations';

export interface ReaperOptions {
  /** How often the sweep runs (REAPER_EVERY_MS, default 60 s). */
  everyMs: number;
  /** Only generations older than this are looked at (REAPER_MIN_AGE_MS, default 2 min): younger ones may still be on their way to the queue. */
  minAgeMs: number;
}

export function reaperOptions(env: NodeJS.ProcessEnv = process.env): ReaperOptions {
  const ms = (v: string | undefined, fallback: number) => (v && Number.isInteger(Number(v)) && Number(v) > 0 ? Number(v) : fallback);
  return { everyMs: ms(env.REAPER_EVERY_MS, 60_000), minAgeMs: ms(env.REAPER_MIN_AGE_MS, 120_000) };
}

/** States in which a job will still run (and end its generation itself). */
const LIVE = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children']);

/** The queue a generation's job lives in (media records name theirs in `routing.queue`). */
function queueOf(g: { apiType: string; requestType: string; routing: unknown }): QueueName {
  if (g.apiType === 'embeddings') return QUEUES.embeddings;
  if (g.apiType === 'images') return QUEUES.image;
  if (g.apiType === 'media') return (g.routing as { queue?: QueueName } | null)?.queue ?? (g.requestType === 'image' ? QUEUES.image : QUEUES.media);
  return QUEUES.text;
}

/**
 * Fails and releases generations that nothing will ever end: still `pending`/`processing`, older than
 * `minAgeMs`, and without a live job (the job was lost with a Redis outage, failed on a database outage before
 * it could record the ending, or stalled more often than allowed). A generation whose job still runs is left
 * alone: media jobs have their own task timeout. Nothing is charged for a reaped generation.
 */
export function stuckGenerationReaper(deps: Pick<WorkerDeps, 'db' | 'generations' | 'redis' | 'config' | 'clock' | 'logger'> & { metrics?: Pick<WorkerDeps['metrics'], 'generationsReaped'> }, opts: ReaperOptions = reaperOptions()) {
  const queues = new Map<QueueName, Queue>();
  const queue = (name: QueueName) => {
    let q = queues.get(name);
    if (!q) queues.set(name, (q = new Queue(name, { connection: deps.redis, prefix: deps.config.queuePrefix })));
    return q;
  };
  return async (): Promise<{ reaped: number }> => {
    const before = new Date(deps.clock().getTime() - opts.minAgeMs);
    const stuck = await deps.db.generation.findMany({
      where: { status: { in: ['pending', 'processing'] }, createdAt: { lt: before } },
      select: { id: true, apiType: true, requestType: true, routing: true },
      orderBy: { createdAt: 'asc' },
      take: 500,
    });
    let reaped = 0;
    for (const g of stuck) {
      const state = await queue(queueOf(g)).getJobState(g.id);
      if (LIVE.has(state)) continue;
      const error = { code: 'SERVICE_UNAVAILABLE', status: 503, message: 'The generation was interrupted before it could finish (nothing was charged): repeat the request' };
      const r = await deps.generations.finish(g.id, { status: 'failed', error });
      if (r.applied) {
        reaped++;
        deps.metrics?.generationsReaped.inc();
        deps.logger.warn('reaped a generation no job will finish', { generationId: g.id, jobState: state });
      }
    }
    return { reaped };
  };
}

/** Installs the repeatable sweep (idempotent). Call at worker start with the `maintenance` queue. */
export async function scheduleReaper(queue: Queue, opts: ReaperOptions = reaperOptions()): Promise<void> {
  const { attempts, removeOnComplete, removeOnFail } = JOB_OPTIONS[QUEUES.maintenance];
  await queue.upsertJobScheduler(REAP_STUCK_GENERATIONS, { every: opts.everyMs }, { name: REAP_STUCK_GENERATIONS, data: {}, opts: { attempts, removeOnComplete, removeOnFail } });
}
