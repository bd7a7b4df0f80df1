import type { JobsOptions, Queue } from 'bullmq';
import { addClaimed, addStandardJobArgs, queueClient } from './bullmq-claim';
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
  /** A ticket when a slot is free, else null; `organizationId`: whose job it is for (the default share counts it). */
  hold(organizationId?: string): ClaimTicket | null;
  /**
   * A ticket for one of the default share's headroom slots (workers/services/default-share.ts), asked when no slot is
   * free: only for an organization holding fewer than its share, and while the headroom has room; else null.
   */
  holdBeyond?(organizationId: string): ClaimTicket | null;
}

/** The lock token of a claimed job (a fetched job's token is the worker's own). */
export function claimToken(workerId: string, n: number): string {
  return `${workerId}:claim:${n}`;
}
export function isClaimToken(token: string | undefined): boolean {
  return token?.includes(':claim:') === true;
}
/** The lock token of a job taken from the wait list into a headroom slot (it waited, so it was counted: not a claim's). */
export function takeToken(workerId: string, n: number): string {
  return `${workerId}:take:${n}`;
}
/** A claimed or a taken job's token: it started on a ticket, not on the worker's fetch. */
export function isTicketToken(token: string | undefined): boolean {
  return isClaimToken(token) || token?.includes(':take:') === true;
}

/**
 * The workers of one process that take jobs as they are enqueued, by qualified queue name (`<prefix>:<queue>`): part
 * of the process's lane (shared/runtime/local-lane.ts), so two processes, or two test stacks, never claim each other's.
 */
export class LocalClaimers {
  private readonly byQueue = new Map<string, Set<Claimer>>();

  /** A worker offers its free slots to the jobs this process enqueues for its queue; the returned function withdraws them. */
  offer(qualifiedName: string, claimer: Claimer): () => void {
    let set = this.byQueue.get(qualifiedName);
    if (!set) this.byQueue.set(qualifiedName, (set = new Set()));
    set.add(claimer);
    return () => {
      set.delete(claimer);
      if (set.size === 0 && this.byQueue.get(qualifiedName) === set) this.byQueue.delete(qualifiedName);
    };
  }

  /**
   * A free slot of a worker of this process for the queue, held until the job starts there or is released; with the
   * job's organization, when every slot is taken, a headroom slot if that organization is under its share; null when none.
   */
  hold(qualifiedName: string, organizationId?: string): ClaimTicket | null {
    const claimers = this.byQueue.get(qualifiedName) ?? [];
    for (const c of claimers) {
      const ticket = c.hold(organizationId);
      if (ticket) return ticket;
    }
    if (organizationId === undefined) return null;
    for (const c of claimers) {
      const ticket = c.holdBeyond?.(organizationId);
      if (ticket) return ticket;
    }
    return null;
  }
}

/** How a job is claimed at enqueue. */
export interface Claim {
  /** The slot it takes. */
  ticket: ClaimTicket;
  /** Start it on the event loop's next turn, once the caller has gone on (a stream's head leaves before the job's work runs); else inside `addJob` (the provider is called soonest). */
  nextTurn?: boolean;
  /** Add the job only if it is claimed: when BullMQ's fetch would not give it now, nothing is added (`not-added`). */
  only?: boolean;
}

/**
 * Adds a job (`queue.add`'s options; `jobId` required). With a claim, the worker holding the ticket takes it in the
 * same script (shared/queue/bullmq-claim.ts): 'claimed'. Otherwise, or when BullMQ's fetch would not give it now, it
 * waits in the queue: 'queued'; with `only`, it is then not added at all: 'not-added'. The ticket is released unless
 * the job started on it. With `fair` (every generation), the job takes its place in its organization's fair order
 * (fairness.ts): only interactive work of an organization with nothing of its own waiting is claimed, decided in the
 * same script; any other job is added with the priority that order gives it.
 */
export async function addJob(queue: Queue, data: object, opts: JobsOptions & { jobId: string }, claim?: Claim, fair?: FairLane): Promise<'claimed' | 'queued' | 'not-added'> {
  // Background work is never claimed: it waits in its organization's fair order.
  const ticket = fair?.workClass === 'background' ? (claim?.ticket.release(), undefined) : claim?.ticket;
  let started = false;
  try {
    const args = ticket && (await addStandardJobArgs(queue, data, opts));
    if (ticket && args) {
      const raw = await addClaimed(queue, args, ticket.token, ticket.lockDuration, claim!.only === true, fair && fairArgs(queue, fair));
      if (raw === 'not-added') return raw;
      if (raw === null) return 'queued';
      if (raw !== 'backlogged') {
        started = true;
        ticket.start(raw, opts.jobId, claim!.nextTurn === true);
        return 'claimed';
      }
    }
    // Not claimed: its organization has work of its own waiting (`backlogged`), or no slot was free.
    if (claim?.only) return 'not-added';
    const priority = fair ? await fairPriority(await queueClient(queue), queue, fair) : 0;
    await queue.add(queue.name, data, priority ? { ...opts, priority } : opts);
    return 'queued';
  } finally {
    if (!started) ticket?.release();
  }
}
