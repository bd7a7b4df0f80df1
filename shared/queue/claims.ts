import type { JobsOptions, Queue } from 'bullmq';
import { addClaimed, addStandardJobArgs } from './bullmq-claim';
import { fairArgs, fairPriority, type FairLane } from './fairness';

/**
 * Claim at enqueue (docs/architecture.md): a job whose client waits in this process, for a queue a worker of this
 * process serves with a free slot, is added and made active for that worker in one Redis script (shared/queue/
 * bullmq-claim.ts), the way BullMQ's own fetch would have made it active, and runs here at once. It is a BullMQ job
 * like any other (in the active list, locked, its lock renewed, re-run by any worker if this process dies, finished by
 * BullMQ), but its pick-up costs nothing: no worker is woken to fetch it, and BullMQ's fetch loop makes none of its
 * follow-up calls (a speculative second fetch, and the wake and fetch that the marker its fetch script re-adds causes).
 */

/** One free slot of a worker of this process, held for one job until it starts there or goes to the queue. */
export interface ClaimTicket {
  /** The lock token the job gets, as if this worker had fetched it. */
  token: string;
  lockDuration: number;
  /**
   * The job is active with this ticket's token: run it (`raw` is its hash, as BullMQ's fetch returns it), at once or,
   * `nextTurn`, on the event loop's next turn.
   */
  start(raw: string[], jobId: string, nextTurn?: boolean): void;
  /** Not claimed: the slot is free again. */
  release(): void;
}

/** A worker of this process that takes jobs as they are enqueued. */
export interface Claimer {
  /** A ticket when a slot is free, else null. */
  hold(): ClaimTicket | null;
}

/** The lock token of a claimed job (a fetched job's token is the worker's own). */
export function claimToken(workerId: string, n: number): string {
  return `${workerId}:claim:${n}`;
}
export function isClaimToken(token: string | undefined): boolean {
  return token?.includes(':claim:') === true;
}

/** Claimers by qualified queue name (`<prefix>:<queue>`): module state, process-wide by nature, like localGrants. */
const claimers = new Map<string, Set<Claimer>>();

/** A worker offers its free slots to the jobs this process enqueues for its queue; the returned function withdraws them. */
export function offerClaims(qualifiedName: string, claimer: Claimer): () => void {
  let set = claimers.get(qualifiedName);
  if (!set) claimers.set(qualifiedName, (set = new Set()));
  set.add(claimer);
  return () => {
    set.delete(claimer);
    if (set.size === 0 && claimers.get(qualifiedName) === set) claimers.delete(qualifiedName);
  };
}

function holdSlot(qualifiedName: string): ClaimTicket | null {
  for (const c of claimers.get(qualifiedName) ?? []) {
    const ticket = c.hold();
    if (ticket) return ticket;
  }
  return null;
}

/**
 * Whether a job may be claimed at enqueue, and when a claimed job starts: `true`, inside `addJob` before its caller
 * goes on (the provider is called soonest); `next-turn`, on the event loop's next turn, once the caller has gone on
 * (a stream's head leaves before the job's own work runs).
 */
export type Claim = boolean | 'next-turn';

/**
 * Adds a job (`queue.add`'s options; `jobId` required). With `claim`, a worker of this process with a free slot
 * takes it in the same script (above): 'claimed'. Otherwise, or when BullMQ's fetch would not give it now, it waits
 * in the queue: 'queued'. With `lane` (every generation), it waits in its organization's fair order (fairness.ts):
 * only interactive work of an organization with nothing waiting may be claimed, in the same one script.
 */
export async function addJob(queue: Queue, data: object, opts: JobsOptions & { jobId: string }, claim: Claim, lane?: FairLane): Promise<'claimed' | 'queued'> {
  const ticket = claim && lane?.workClass !== 'background' ? holdSlot(queue.qualifiedName) : null;
  let started = false;
  try {
    const args = ticket && (await addStandardJobArgs(queue, data, opts));
    if (ticket && args) {
      const raw = await addClaimed(queue, args, ticket.token, ticket.lockDuration, lane && fairArgs(queue, lane));
      if (raw === null) return 'queued';
      if (raw !== 'backlogged') {
        started = true;
        ticket.start(raw, opts.jobId, claim === 'next-turn');
        return 'claimed';
      }
    }
    const priority = lane ? await fairPriority(queue, lane) : 0;
    await queue.add(queue.name, data, priority ? { ...opts, priority } : opts);
    return 'queued';
  } finally {
    if (!started) ticket?.release();
  }
}
