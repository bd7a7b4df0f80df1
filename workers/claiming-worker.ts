import { Worker, type Job } from 'bullmq';
import { claimedJobJson } from '../shared/queue/claims';
import { ticketTokenPrefixes, type Claimer, type ClaimTicket, type LocalClaimers } from '../shared/queue/claims';
import type { JobLocks } from '../shared/queue/job-lock';
import type { SlotShare } from './services/default-share';

/**
 * A BullMQ Worker that also runs the jobs this process's API claims for it as it enqueues them
 * (shared/queue/claims.ts). A claimed job runs through the Worker's own `processJob`, as a fetched one does: the
 * lock is tracked and renewed, a stop message aborts it, and it is moved to completed or failed with the same
 * events. It only skips the fetch.
 *
 * Slots: a claim is offered only while the jobs running here (claimed or fetched) and the claims being made stay
 * below the Worker's concurrency. BullMQ's own loop counts only what it fetched, so it may still fetch up to its
 * concurrency beside claimed jobs: at most twice the concurrency runs for a moment.
 */
export class ClaimingWorker extends Worker implements Claimer {
  /** Jobs inside the processor, claimed or fetched. */
  private busy = 0;
  /** Tickets handed out, not yet started or released. */
  private holding = 0;
  /** Claimed jobs waiting for the event loop's next turn to start. */
  private starting = 0;
  private tickets = 0;
  private readonly tokens = ticketTokenPrefixes(this.id);
  private readonly claimed = new Set<Promise<unknown>>();
  private withdraw?: () => void;
  private share?: SlotShare;
  private locks?: JobLocks;

  /** Offers this Worker's free slots to the jobs its process enqueues for its queue (the process's lane: `claimers`). */
  offerClaims(claimers: LocalClaimers): this {
    this.withdraw ??= claimers.offer(this.qualifiedName, this);
    return this;
  }

  /** Counts the organizations holding its slots in `share`, the queue's in this process, and runs jobs given its headroom. */
  shareWith(share: SlotShare): this {
    this.share = share;
    return this;
  }

  /** Keeps what this process knows of its jobs' locks in `locks` (shared/queue/job-lock.ts): taken at the start, renewed. */
  trackLocks(locks: JobLocks): this {
    this.locks = locks;
    return this;
  }

  /** BullMQ's lock renewal (its LockManager calls it every half lock duration), reported to `locks` with the time it went out. */
  override async extendJobLocks(jobIds: string[], tokens: string[], duration: number): Promise<string[]> {
    const sentAt = performance.now();
    const failed = await super.extendJobLocks(jobIds, tokens, duration);
    this.locks?.renewals(jobIds, failed, sentAt);
    return failed;
  }

  private takesJobs(): boolean {
    // A rate-limited worker leaves every job to its fetch, which applies the limit.
    return !this.closing && this.isRunning() && !this.isPaused() && !this.opts.limiter;
  }

  full(): boolean {
    return this.busy + this.holding + this.starting >= this.concurrency;
  }

  hold(organizationId?: string): ClaimTicket | null {
    return this.takesJobs() && !this.full() ? this.ticket(this.tokens.claim + this.tickets++, organizationId) : null;
  }

  holdBeyond(organizationId: string): ClaimTicket | null {
    return this.share && this.takesJobs() ? this.share.beyond(organizationId, this, 'claim') : null;
  }

  ticketBeyond(kind: 'claim' | 'take', organizationId: string, ended: () => void): ClaimTicket {
    return this.ticket(this.tokens[kind] + this.tickets++, organizationId, ended);
  }

  /** A slot for one job; its organization, when known, holds it in the share from now until the job ends or the ticket is released. */
  private ticket(token: string, organizationId?: string, ended?: () => void): ClaimTicket {
    this.holding++;
    const org = this.share && organizationId;
    if (org) this.share!.started(org);
    // The first of `start` and `release` gives the held slot back; the other does nothing.
    let open = true;
    return {
      token,
      lockDuration: this.opts.lockDuration ?? 30_000,
      start: (raw, jobId, nextTurn) => {
        if (!open) return;
        open = false;
        this.holding--;
        this.runClaimed(raw, jobId, token, nextTurn === true, org, ended);
      },
      release: () => {
        if (!open) return;
        open = false;
        this.holding--;
        if (org) this.share!.ended(org);
        ended?.();
      },
    };
  }

  protected override async callProcessJob(job: Job, token: string, signal?: AbortSignal): Promise<unknown> {
    this.busy++;
    if (this.share && this.full()) this.share.full();
    // A fetched job's organization holds its slot in the share while it runs (a ticket's was counted with the ticket:
    // the job runs under one of this worker's ticket tokens).
    const org = (job.data as { organizationId?: unknown } | undefined)?.organizationId;
    const ticketed = token.startsWith(this.tokens.claim) || token.startsWith(this.tokens.take);
    const held = this.share && typeof org === 'string' && !ticketed ? org : undefined;
    if (held) this.share!.started(held);
    const lock = this.locks?.track(job, token, this.opts.lockDuration ?? 30_000);
    try {
      return await super.callProcessJob(job, token, signal);
    } finally {
      this.busy--;
      if (held) this.share!.ended(held);
      if (lock) this.locks!.untrack(job.id!, lock);
    }
  }

  /**
   * Runs a claimed job now, or on the event loop's next turn (`nextTurn`); `close` waits for it either way. Once it is
   * over, `org` (the ticket's) no longer holds the slot in the share, then `ended`.
   */
  private runClaimed(raw: string[], jobId: string, token: string, nextTurn: boolean, org?: string, ended?: () => void): void {
    if (nextTurn) this.starting++;
    const run: Promise<unknown> = this.claimedRun(raw, jobId, token, nextTurn)
      .catch((err: unknown) => this.emit('error', err as Error))
      .finally(() => {
        this.claimed.delete(run);
        if (org) this.share!.ended(org);
        ended?.();
      });
    this.claimed.add(run);
  }

  /** A claimed job's run: synchronous up to the processor's first wait, unless it waits for the next turn first. */
  private async claimedRun(raw: string[], jobId: string, token: string, nextTurn: boolean): Promise<unknown> {
    if (nextTurn) {
      await new Promise<void>((r) => setImmediate(r));
      this.starting--;
    }
    let job: Job;
    try {
      // Decoded as BullMQ decodes what its fetch returns (numbers, options, short field names).
      job = this.createJob(claimedJobJson(raw), jobId);
    } catch (err) {
      // Not run here: the job is active under a lock nobody renews, so a stalled check hands it to a worker again.
      this.emit('error', err as Error);
      return;
    }
    job.token = token;
    this.emit('active', job, 'waiting');
    // Completed or failed here, never fetching a next job (that is the loop's business).
    return this.processJob(job, token, () => false);
  }

  /** Takes no more claims and lets the claimed jobs finish (unless forced), then closes as a Worker does. */
  override async close(force = false): Promise<void> {
    this.withdraw?.();
    if (!force) await Promise.allSettled([...this.claimed]);
    return super.close(force);
  }
}
