import { Queue } from 'bullmq';
import { AppError } from '../../shared/errors/app-error';
import { JOB_OPTIONS, queueOfGeneration } from '../../shared/queue/job-catalog';
import { QUEUES, type QueueName } from '../../shared/queue/queue-names';
import type { WorkerDeps } from '../worker-deps';
import { endGeneration, keepPromised } from '../../shared/billing/ending';
import type { ReaperSettings } from '../../shared/config/env';
import type { CallbackService } from '../../shared/services/callbacks.service';
import { RUNNING_STATUSES } from '../../shared/services/generation.service';
import { isParked, UpstreamBatches } from '../../shared/services/upstream-batches.service';

/** Job name in the `maintenance` queue. Never rename it: the scheduler in Redis refers to it. */
export const REAP_STUCK_GENERATIONS = 'reap-stuck-generations';

/**
 * How often the sweep runs (REAPER_EVERY_MS, default 60 s), and the age below which generations are left alone
 * (REAPER_MIN_AGE_MS, default 2 min: younger ones may still be on their way to the queue); Config.reaper.
 */
export type ReaperOptions = ReaperSettings;

/** States in which a job will still run (and end its generation itself). */
const LIVE = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children']);

/**
 * Fails and releases generations that nothing will ever end: still `pending`/`processing`, older than
 * `minAgeMs`, and without a live job (the job was lost with a Redis outage, failed on a database outage before
 * it could record the ending, or stalled more often than allowed). A generation whose job still runs is left
 * alone: media jobs have their own task timeout. Nothing is charged for a reaped generation, except one whose worker
 * replied with its cost before the commit and then died (its promised settlement is kept, and with it the record of a
 * generation granted from a lease that was never recorded). The same sweep releases
 * the reservation leases of processes that died (shared/billing/leases.ts).
 */
export function stuckGenerationReaper(
  deps: Pick<WorkerDeps, 'db' | 'generations' | 'ledger' | 'lane' | 'settlements' | 'redis' | 'config' | 'clock' | 'logger' | 'tracing'> & { metrics?: Pick<WorkerDeps['metrics'], 'generationsReaped'> },
  opts: ReaperOptions = deps.config.reaper,
  /** A reaped generation with a `callBackUrl` is POSTed there like any other ending (docs/callbacks.md). */
  callbacks?: Pick<CallbackService, 'enqueue'>,
) {
  const queues = new Map<QueueName, Queue>();
  const queue = (name: QueueName) => {
    let q = queues.get(name);
    if (!q) queues.set(name, (q = new Queue(name, { connection: deps.redis, prefix: deps.config.queuePrefix })));
    return q;
  };
  return async (): Promise<{ reaped: number; leases: number }> => {
    // Leases whose process stopped renewing them (it died): what is left of them goes back to the balance.
    const leases = await deps.generations.sweepLeases();
    if (leases > 0) deps.logger.warn('released leases their processes stopped renewing', { leases });
    const before = new Date(deps.clock().getTime() - opts.minAgeMs);
    const stuck = await deps.db.generation.findMany({
      // completedAt null: read from each month's small index of the generations not ended (generations_unended_created_at_idx).
      where: { status: { in: [...RUNNING_STATUSES] }, completedAt: null, createdAt: { lt: before } },
      select: { id: true, organizationId: true, apiType: true, requestType: true, routing: true, callBackUrl: true },
      orderBy: { createdAt: 'asc' },
      take: 500,
    });
    let reaped = 0;
    // Batch lines parked for a provider's batch API have no job while they wait there (docs/batches.md).
    const parked = stuck.filter((g) => isParked(g.routing)).map((g) => g.id);
    const waiting = await new UpstreamBatches(deps.db).waiting(parked);
    // Promises that carry the record of a generation granted from a lease, whose job no longer runs: their records never
    // committed, so no stuck generation names them; the reply they showed is kept (recorded, then charged).
    for (const p of await deps.settlements.withRecordsOlderThan(opts.minAgeMs, deps.clock().getTime())) {
      const state = await queue(queueOfGeneration({ apiType: String(p.open.api_type), requestType: String(p.open.request_type), routing: p.open.routing })).getJobState(p.generationId);
      if (LIVE.has(state)) continue;
      if (await keepPromised(deps, p)) {
        deps.logger.warn('kept a settlement promised, with its record, by a job that ended before committing either', { generationId: p.generationId, jobState: state });
      }
    }
    for (const g of stuck) {
      if (waiting.has(g.id)) continue;
      const state = await queue(queueOfGeneration(g)).getJobState(g.id);
      if (LIVE.has(state)) continue;
      // A worker that replied before it could commit (settlement-journal.ts): the charge its reply showed stands.
      if (await keepPromised(deps, { organizationId: g.organizationId, generationId: g.id })) {
        deps.logger.warn('kept a settlement promised by a job that ended before committing it', { generationId: g.id, jobState: state });
        continue;
      }
      const error = new AppError('SERVICE_UNAVAILABLE', 'The generation was interrupted before it could finish (nothing was charged): repeat the request').toStored();
      const r = await endGeneration(deps, null, { generationId: g.id, organizationId: g.organizationId }, { kind: 'end', finish: { status: 'failed', error } });
      if (r?.applied) {
        reaped++;
        deps.metrics?.generationsReaped.inc();
        deps.logger.warn('reaped a generation no job will finish', { generationId: g.id, jobState: state });
        if (g.callBackUrl && callbacks) {
          await callbacks
            .enqueue({ generationId: g.id, organizationId: g.organizationId, url: g.callBackUrl, status: 'failed' })
            .catch((err: unknown) => deps.logger.error('callback of a reaped generation not queued', { generationId: g.id, err }));
        }
      }
    }
    return { reaped, leases };
  };
}

/** Installs the repeatable sweep (idempotent). Call at worker start with the `maintenance` queue. */
export async function scheduleReaper(queue: Queue, opts: ReaperOptions): Promise<void> {
  const { attempts, removeOnComplete, removeOnFail } = JOB_OPTIONS[QUEUES.maintenance];
  await queue.upsertJobScheduler(REAP_STUCK_GENERATIONS, { every: opts.everyMs }, { name: REAP_STUCK_GENERATIONS, data: {}, opts: { attempts, removeOnComplete, removeOnFail } });
}
