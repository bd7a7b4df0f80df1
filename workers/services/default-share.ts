import type Redis from 'ioredis';
import type { Logger } from '../../shared/logger';
import { takeWaiting, waitingJobOrganization } from '../../shared/queue/claims';
import type { ClaimTicket } from '../../shared/queue/claims';

/**
 * The default share (docs/architecture.md "Fair queues"), the one place of its rule: with no cap set, an organization
 * may hold every slot of a worker process's queue, but not the last ones another organization's waiting call needs.
 * Each worker process keeps, per generation queue, a few headroom slots beyond its concurrency (WORKER_SHARE_HEADROOM,
 * a fraction of it) that only an organization holding fewer than its share of that process's slots may take, and only
 * when every slot is held:
 *
 * - a call claimed at enqueue in this process (shared/queue/claims.ts `holdBeyond`);
 * - a call waiting in the wait list, taken from it by this process (`takeIntoHeadroom`, below), wherever it was
 *   enqueued. The wait list holds the interactive jobs of organizations with nothing of their own waiting
 *   (shared/queue/fairness.ts), at most one per organization, so a full process looks at it every few ms.
 *
 * An organization alone gets the process's whole concurrency and never the headroom (it holds its share: all of it),
 * so nothing is kept idle from it except slots beyond what the operator configured. Nothing is put back: a job is
 * taken or it is not, before any reservation of the worker's or any provider call, and it runs like any other.
 */

/**
 * The rule: an organization holding `held` of a process's `slots` in a queue, where `holders` organizations hold at
 * least one, is under its share when it holds fewer than an equal part of the slots among them (itself counted).
 */
export function underShare(held: number, holders: number, slots: number): boolean {
  return held * (held === 0 ? holders + 1 : holders) < slots;
}

/** The headroom of a queue of `concurrency` slots per process: `fraction` of it, at least one slot; none for 0. */
export function headroomSlots(concurrency: number, fraction: number): number {
  return fraction > 0 ? Math.max(1, Math.ceil(concurrency * fraction)) : 0;
}

/** What the share asks of a queue's Workers in one process (workers/claiming-worker.ts). */
export interface ShareWorker {
  /** Its keys in Redis, in BullMQ's naming. */
  keys: Record<string, string>;
  toKey(type: string): string;
  /** Every slot running, held or starting a job. */
  full(): boolean;
  /**
   * A ticket beyond its concurrency for a job of `organizationId` (held in the share from now), for a claim or
   * (`take`) a job taken from the wait list; `ended` once it ran or was released.
   */
  ticketBeyond(kind: 'claim' | 'take', organizationId: string, ended: () => void): ClaimTicket;
}

/** The slots of one queue in one process: which organizations hold them, and the headroom in use. */
export class SlotShare {
  readonly headroom: number;
  private readonly held = new Map<string, number>();
  private extra = 0;

  constructor(
    /** The queue's concurrency in this process (WORKER_CONCURRENCY_<QUEUE>). */
    readonly slots: number,
    fraction: number,
  ) {
    this.headroom = headroomSlots(slots, fraction);
  }

  /** A job of `org` holds a slot of this process: from its ticket (claimed, taken) or its start (fetched). */
  started(org: string): void {
    this.held.set(org, (this.held.get(org) ?? 0) + 1);
  }

  ended(org: string): void {
    const n = (this.held.get(org) ?? 0) - 1;
    if (n > 0) this.held.set(org, n);
    else this.held.delete(org);
  }

  private onFull?: () => void;

  /** A Worker of the queue has every slot held (the take loop wakes: `takeIntoHeadroom`). */
  full(): void {
    this.onFull?.();
  }

  /** `fn` runs whenever a Worker of the queue is full (one listener). */
  whenFull(fn: () => void): void {
    this.onFull = fn;
  }

  /** Headroom slots free now. */
  get room(): number {
    return this.headroom - this.extra;
  }

  /** A headroom slot of `w` for a job of `org`, if it is under its share and the headroom has room; else null. */
  beyond(org: string, w: ShareWorker, kind: 'claim' | 'take'): ClaimTicket | null {
    if (this.room <= 0 || !underShare(this.held.get(org) ?? 0, this.held.size, this.slots)) return null;
    this.extra++;
    return w.ticketBeyond(kind, org, () => void this.extra--);
  }
}

/** How often a full process looks at its wait list, and how far from its head. */
export const TAKE_EVERY_MS = 25;
const TAKE_SCAN = 16;

/**
 * While every slot of the queue's Workers in this process is held and the headroom has room, looks at the jobs nearest
 * the wait list's head every TAKE_EVERY_MS and takes those of organizations under their share, oldest first
 * (claims.ts takeWaiting: atomic, so two processes never take one job). Its timer runs only from a Worker's
 * filling up to the first look that finds a slot free. Returns the function that stops it.
 */
export function takeIntoHeadroom(o: { share: SlotShare; workers: ShareWorker[]; redis: Redis; logger: Logger; everyMs?: number }): () => void {
  const { share, workers, redis } = o;
  const queue = workers[0]!;
  const orgs = new Map<string, string | null>();
  let next = 0;
  let busy = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = async () => {
    if (busy) return;
    if (!workers.every((w) => w.full())) {
      clearInterval(timer);
      timer = undefined;
      orgs.clear();
      return;
    }
    if (share.room <= 0) return;
    busy = true;
    try {
      const ids = await redis.lrange(queue.keys.wait!, -TAKE_SCAN, -1);
      for (const id of orgs.keys()) if (!ids.includes(id)) orgs.delete(id);
      // BullMQ fetches from the list's right end: the oldest job is the last.
      for (let i = ids.length - 1; i >= 0 && share.room > 0 && !stopped; i--) {
        const id = ids[i]!;
        let org = orgs.get(id);
        if (org === undefined) orgs.set(id, (org = await waitingJobOrganization(redis, queue, id)));
        // Full now, not only when the look began: a slot freed meanwhile is the fetch's to fill.
        if (!workers.every((w) => w.full())) break;
        const ticket = org === null ? null : share.beyond(org, workers[next++ % workers.length]!, 'take');
        if (!ticket) continue;
        const raw = await takeWaiting(redis, queue, id, ticket.token, ticket.lockDuration).catch((err: unknown) => (ticket.release(), Promise.reject(err)));
        if (raw) ticket.start(raw, id);
        else ticket.release();
      }
    } catch (err) {
      o.logger.warn('the default share could not look at the wait list', { err, queue: queue.keys.wait });
    } finally {
      busy = false;
    }
  };
  share.whenFull(() => {
    if (timer || stopped || !workers.every((w) => w.full())) return;
    timer = setInterval(() => void tick(), o.everyMs ?? TAKE_EVERY_MS);
    timer.unref?.();
    void tick();
  });
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
