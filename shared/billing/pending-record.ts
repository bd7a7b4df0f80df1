import type { DrawnRow } from './ledger';

/**
 * The record of a generation granted from a lease (shared/billing/leases.ts), committing while its job runs in the
 * process that drew it and claimed the job (docs/architecture.md "Submitting"). The worker takes it from the process's
 * lane (shared/runtime/local-lane.ts), never from Redis. Its row lets the worker's settlement promise carry the record,
 * so the reply need not wait for that commit; the gateway and the worker, one event loop, agree through it on who
 * tells the client what when the record fails.
 */
export class PendingRecord {
  /** A `done` reached the client before the record was known to have failed: the promise must be kept. */
  replied = false;
  /** The record failed first: the client was told 503, and nothing is to be settled. */
  lost = false;
  /** The record has committed (a promise made now need not carry it). */
  done = false;
  /** Settles once the record's commit is known (rejects when it failed). */
  readonly committed: Promise<unknown>;
  private started!: (commit: Promise<unknown>) => void;

  constructor(readonly row: DrawnRow) {
    this.committed = new Promise((resolve) => (this.started = resolve));
    this.committed.then(
      () => (this.done = true),
      () => undefined,
    );
  }

  /** The record's commit has started (once its job is claimed): `committed` settles as it does. */
  commit(commit: Promise<unknown>): void {
    this.started(commit);
  }
}
