import type Redis from 'ioredis';
import type { DrawnRow } from '../billing/ledger';

/**
 * Reserve and enqueue at once (docs/architecture.md): a generation whose client waits for it goes to its queue while
 * its reservation commits, so the enqueue and the worker's pick-up no longer add to the reservation's time. The job is
 * marked `awaitsGrant`; its worker calls no provider before the reservation's outcome reaches it here:
 *
 * - the API process settles the outcome once the reservation is known: the amount granted (with the whole job when
 *   less than the bound was granted: text lowers `max_output_tokens`), or refused (nothing was reserved or recorded);
 * - a worker of the same process that already waits takes it in memory (module state: process-wide by nature, like
 *   the in-process replies of generation-bus.ts); any other outcome is written to Redis (`<prefix>:grant:<id>`),
 *   where a worker of another process, or a local worker that picks the job up later, reads it. A job re-run after a
 *   stall whose first run took its outcome in memory finds none: its API process died with that run (below), or
 *   that process's event loop stood still past the job's lock, and the re-run then ends the generation failed (the
 *   first run's ending is not applied after it: an answer it still sends goes uncharged, and is logged);
 * - the database answers for an API process that died before it settled: a generation that is no longer running
 *   was ended by someone else; a reservation committed without an outcome following within `orphanAfterMs` was
 *   left by a dead API process (its client is gone); nothing reserved within the wait means nothing will run.
 */
export type GrantOutcome = { granted: string; job?: Record<string, unknown>; record?: PendingRecord } | { refused: true };

/**
 * The record of a generation granted from a lease (shared/billing/leases.ts), still committing while its job runs in
 * the process that drew it: handed to that process's worker with its outcome, in memory only (never to Redis: a worker
 * elsewhere is told only once the record has committed). Its row lets the worker's settlement promise carry the record
 * (docs/architecture.md "Leases"), so the reply need not wait for that commit; the gateway and the worker, one event
 * loop, agree through it on who tells the client what when the record fails.
 */
export class PendingRecord {
  /** A `done` reached the client before the record was known to have failed: the promise must be kept. */
  replied = false;
  /** The record failed first: the client was told 503, and nothing is to be settled. */
  lost = false;
  /** The record has committed (a promise made now need not carry it). */
  done = false;
  constructor(
    readonly row: DrawnRow,
    /** Settles once the record's commit is known (rejects when it failed). */
    readonly committed: Promise<unknown>,
  ) {
    committed.then(
      () => (this.done = true),
      () => undefined,
    );
  }
}

/** What a worker learns: an outcome (`inMemory` from its own process's API), or what the database says when none came. */
export type Grant = (GrantOutcome & { inMemory?: true }) | { ended: true } | { orphaned: true } | { timedOut: true };

/**
 * The worker's database fallback: whether the generation is recorded (its reservation committed: both are written in
 * one transaction) and still running.
 */
export type GrantRecords = (generationId: string) => Promise<'running' | 'ended' | null>;

/** How long an outcome stays in Redis: longer than a client waits for its reply (SYNC_WAIT_MS, 120 s) and a re-run. */
export const GRANT_TTL_MS = 300_000;

/** When a worker without an outcome turns to the database. */
export interface GrantTiming {
  /** The first look at the database, and the interval between looks (2 s). */
  checkMs: number;
  /** A generation recorded (its reservation committed) this long without an outcome in Redis was left by an API process that died (5 s). */
  orphanAfterMs: number;
  /** With nothing recorded this long, nothing will be: the API process died before its reservation committed (WORKER_GRANT_WAIT_MS, 60 s). */
  waitMs: number;
}

export const GRANT_TIMING: GrantTiming = { checkMs: 2_000, orphanAfterMs: 5_000, waitMs: 60_000 };

interface LocalGrant {
  promise: Promise<GrantOutcome>;
  resolve(o: GrantOutcome): void;
  /** A worker of this process waits for it. */
  claimed: boolean;
}

const localGrants = new Map<string, LocalGrant>();

export class GrantDesk {
  /** Outcomes (and jobs: shared/queue/claims.ts) are handed to this process's workers in memory. */
  readonly inProcess: boolean;
  private readonly timing: GrantTiming;
  /**
   * The worker: the records pending for the jobs it runs, by generation id, from the outcome's arrival to the end of
   * the run (`forget`). By id, not by the job's data object, which a run may replace (the masker plugin does).
   */
  private readonly records = new Map<string, PendingRecord>();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    opts: { inProcess?: boolean } & Partial<GrantTiming> = {},
  ) {
    const { inProcess, ...timing } = opts;
    this.inProcess = inProcess !== false;
    this.timing = { ...GRANT_TIMING, ...timing };
  }

  private key(generationId: string): string {
    return `${this.prefix}:grant:${generationId}`;
  }

  /** The API process: a job for this generation is about to be enqueued before its reservation is known. */
  expect(generationId: string): void {
    if (!this.inProcess) return;
    let resolve!: (o: GrantOutcome) => void;
    const promise = new Promise<GrantOutcome>((r) => (resolve = r));
    localGrants.set(generationId, { promise, resolve, claimed: false });
  }

  /**
   * The API process: the reservation's outcome, for the worker that runs (or will run) the job. `claimedHere`: the
   * job was claimed at enqueue by a worker of this process (claims.ts), which takes the outcome from memory even when
   * it asks only after this.
   */
  async settle(generationId: string, outcome: GrantOutcome, claimedHere = false): Promise<void> {
    const local = localGrants.get(generationId);
    local?.resolve(outcome);
    if (local && !local.claimed && claimedHere) return;
    localGrants.delete(generationId);
    if (local?.claimed) return;
    const { record: _, ...stored } = outcome as { record?: PendingRecord };
    await this.redis.set(this.key(generationId), JSON.stringify(stored), 'PX', GRANT_TTL_MS);
  }

  /** The worker: the record pending for the generation it runs, taken with its outcome from memory (`forget` drops it). */
  recordOf(generationId: string): PendingRecord | undefined {
    return this.records.get(generationId);
  }

  /** How many runs hold a pending record now. */
  get pendingRecords(): number {
    return this.records.size;
  }

  /** The worker: the job's run is over; an outcome it read from Redis is not needed again, nor its pending record. */
  forget(generationId: string, grant: Grant): void {
    if ('record' in grant && grant.record && this.records.get(generationId) === grant.record) this.records.delete(generationId);
    if ('inMemory' in grant) return;
    this.redis.del(this.key(generationId)).catch(() => undefined);
  }

  /**
   * The worker: waits for the outcome of the reservation the job was enqueued with (in memory when its API process is
   * this one and has not settled yet, else from Redis, polled), falling back to the database (above).
   */
  async wait(generationId: string, records: GrantRecords): Promise<Grant> {
    const local = this.inProcess ? localGrants.get(generationId) : undefined;
    if (local) {
      local.claimed = true;
      const outcome = await local.promise;
      localGrants.delete(generationId);
      if ('record' in outcome && outcome.record) this.records.set(generationId, outcome.record);
      return { ...outcome, inMemory: true };
    }
    const { checkMs, orphanAfterMs, waitMs } = this.timing;
    const started = Date.now();
    let nextCheck = started + checkMs;
    let reservedSince: number | undefined;
    for (let attempt = 0; ; attempt++) {
      // A Redis or database error is waited out like a missing outcome.
      const text = await this.redis.get(this.key(generationId)).catch(() => null);
      if (text) return JSON.parse(text) as GrantOutcome;
      const now = Date.now();
      if (now >= nextCheck) {
        nextCheck = now + checkMs;
        const state = await records(generationId).catch(() => undefined);
        if (state === 'ended') return { ended: true };
        if (state === 'running') {
          reservedSince ??= now;
          if (now - reservedSince >= orphanAfterMs) return { orphaned: true };
        } else if (now - started >= waitMs) {
          return { timedOut: true };
        }
      }
      await new Promise((r) => setTimeout(r, Math.min(50, 1 << Math.min(attempt >> 1, 6))));
    }
  }
}
