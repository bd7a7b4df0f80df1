import { LocalClaimers } from '../queue/claims';
import { LocalBuses } from '../queue/generation-bus';
import type { PendingRecord } from '../billing/settlement-journal';

/**
 * What the API and the workers of one process share in memory (docs/architecture.md "One lane"), built once per process
 * (shared/runtime/bootstrap.ts) and handed to both: two processes, or two test stacks, are two lanes. Nothing in it must
 * outlive the process: what a restart needs is in Redis or PostgreSQL.
 */
export class LocalLane {
  /** The workers of this process offering their free slots to the jobs its API enqueues (claim at enqueue). */
  readonly claimers = new LocalClaimers();
  /** The reply channels of this process's API: its workers hand them their messages directly. */
  readonly buses = new LocalBuses();
  /** Jobs claimed here with their money drawn from a lease: their records, from the claim to the end of their run. */
  private readonly records = new Map<string, { record: PendingRecord; taken: boolean }>();

  /** The API: a job drawn from a lease is about to be claimed here, with its record. */
  hand(generationId: string, record: PendingRecord): void {
    this.records.set(generationId, { record, taken: false });
  }

  /**
   * The worker: the record handed with the job, for the run that starts it; undefined for any other run (a re-run after
   * this process stood still past the job's lock, or in another process: docs/architecture.md "Submitting").
   */
  take(generationId: string): PendingRecord | undefined {
    const entry = this.records.get(generationId);
    if (!entry || entry.taken) return undefined;
    entry.taken = true;
    return entry.record;
  }

  /** The record of the generation a run of this process holds (shared/billing/ending.ts endGeneration). */
  recordOf(generationId: string): PendingRecord | undefined {
    return this.records.get(generationId)?.record;
  }

  /** The run is over, or the job was never claimed: its record leaves the lane. */
  drop(generationId: string, record: PendingRecord): void {
    if (this.records.get(generationId)?.record === record) this.records.delete(generationId);
  }

  /** How many records the lane holds now. */
  get pendingRecords(): number {
    return this.records.size;
  }
}
