import type { Job } from 'bullmq';

/**
 * How sure a process is that it still holds a running job (BullMQ's `<job>:lock`, renewed by its Worker every half lock
 * duration). Surely until the last renewal it sent (or the job's start) plus the lock's duration: Redis set the expiry no
 * earlier than that. A process that stood still longer than its lock (frozen, swapped out) may have lost the job to a
 * stalled check and another process's run, which may already have ended the generation: before anything more of the job
 * goes out past that time, `held()` renews the lock once itself, which succeeds only while the lock is still this
 * process's; refused (or not answered), the job is lost, and its run sends nothing more (decisions.md section 4). Times
 * are the monotonic clock's, so a wall clock set back cannot stretch them; asking costs nothing while the lock is surely
 * held (every delta of a stream asks).
 */
export class JobLock {
  /** performance.now() until which the lock is surely held. */
  private until: number;
  private lost = false;
  private asking?: Promise<boolean>;

  constructor(
    private readonly job: Pick<Job, 'extendLock'>,
    private readonly token: string,
    private readonly durationMs: number,
    /** When the lock was taken (the job's `processedOn`, wall clock ms). */
    takenAt: number,
  ) {
    this.until = performance.now() - Math.max(0, Date.now() - takenAt) + durationMs;
  }

  /** The Worker renewed it; `sentAt`: performance.now() when the renewal went out. */
  renewed(sentAt: number): void {
    this.until = Math.max(this.until, sentAt + this.durationMs);
  }

  /** A renewal was refused: another run holds the job now (or nobody: it lapsed). */
  refused(): void {
    this.lost = true;
  }

  /** Held for sure now, without asking Redis. */
  surely(): boolean {
    return !this.lost && performance.now() < this.until;
  }

  /** Whether this process still holds the job: at once while surely held, else after renewing it once. */
  held(): Promise<boolean> {
    if (this.surely()) return Promise.resolve(true);
    if (this.lost) return Promise.resolve(false);
    return (this.asking ??= this.renew().finally(() => (this.asking = undefined)));
  }

  private async renew(): Promise<boolean> {
    const sentAt = performance.now();
    // A Redis that does not answer leaves it unknown: nothing goes out meanwhile (the job may be another's by now).
    const ok = await this.job.extendLock(this.token, this.durationMs).then((r) => Number(r) === 1, () => undefined);
    if (ok) this.renewed(sentAt);
    else if (ok === false) this.refused();
    return ok === true;
  }
}

/** Thrown where a run that lost its job would send something more of it: the run ends there, sending nothing. */
export class JobLost extends Error {
  constructor(readonly jobId: string) {
    super(`this process no longer holds job ${jobId} (it stood still past its lock): nothing more of it is sent`);
  }
}

/**
 * The locks of the jobs a process's Workers run (workers/claiming-worker.ts tracks them and reports its renewals), by job
 * id: a processor reads its job's with `get`. A job run twice here (its lock lapsed and this process's Worker fetched it
 * again) has the newer run's lock; the older run keeps its own object, which no renewal reaches any more.
 */
export class JobLocks extends Map<string, JobLock> {
  track(job: Pick<Job, 'id' | 'extendLock' | 'processedOn'>, token: string, durationMs: number): JobLock {
    const lock = new JobLock(job, token, durationMs, job.processedOn ?? 0);
    this.set(job.id!, lock);
    return lock;
  }

  untrack(jobId: string, lock: JobLock): void {
    if (this.get(jobId) === lock) this.delete(jobId);
  }

  /** The Worker's renewal of these jobs' locks, sent at `sentAt` (performance.now()), answered: `failed` were refused. */
  renewals(jobIds: string[], failed: string[], sentAt: number): void {
    for (const id of jobIds) {
      const lock = this.get(id);
      if (failed.includes(id)) lock?.refused();
      else lock?.renewed(sentAt);
    }
  }
}
