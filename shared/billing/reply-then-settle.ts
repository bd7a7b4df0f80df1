/**
 * The order of a generation's money at its end (docs/architecture.md "Reply, then settle"): the promise in the
 * settlement journal, the reply, the commit of the close, the erase; the record of a drawn generation carried by the
 * promise. The worker's executors report an answered generation here (workers/services/attempt-loop.ts endCompleted).
 */
import type { Job } from 'bullmq';
import { AppError } from '../errors/app-error';
import type { Logger } from '../logger';
import { money, type Decimal } from '../money';
import type { GenerationEvent } from '../queue/generation-bus';
import type { GenerationJobBase } from '../queue/job-catalog';
import type { CloseRow } from './ledger';
import type { PendingRecord } from './pending-record';
import { PromiseRefused, type PromiseKeeper, type SettlementJournal } from './settlement-journal';

/** The ledger's closes: GenerationService (shared/services/generation.service.ts). */
export interface SettlementLedger extends PromiseKeeper {
  finishRow(row: CloseRow, opts?: { hold?: boolean }): Promise<{ applied: boolean; charged: Decimal }>;
}

/** What a settlement needs of the process (the workers' WorkerDeps has it). */
export interface SettlementDeps {
  generations: SettlementLedger;
  settlements: SettlementJournal;
  /** The records of the generations drawn from a lease and run here (shared/runtime/local-lane.ts). */
  lane: { recordOf(generationId: string): PendingRecord | undefined };
  logger: Logger;
  config: { syncWaitMs: number };
}

/** Where the reply goes: the job's GenerationPublisher. */
export interface ReplyChannel {
  send(event: GenerationEvent): Promise<unknown>;
  /** Rejects once the run has lost its job (shared/queue/job-lock.ts): it then settles nothing and sends nothing more. */
  ensureOwned?(): Promise<void>;
}

/** The generation settled: the job's fields a settlement reads. */
export type CompletedJob = Pick<GenerationJobBase, 'generationId' | 'organizationId' | 'replyTo' | 'reserved' | 'traceId'> & { mode?: string };

type JobIds = Pick<GenerationJobBase, 'generationId' | 'organizationId' | 'traceId'>;

/**
 * How long a stream's last event waits for its settlement's commit (at most a quarter of SYNC_WAIT_MS) before it goes
 * out on a promise instead (reply, then settle): a PostgreSQL that is away or slow never holds a stream's ending.
 */
export const STREAM_COMMIT_WAIT_MS = 1_000;

/**
 * Settles a generation that answered: charges `row.cost`, records the ending and sends `done` with the cost charged
 * (`payload.cost`), or `cancelled` when another ending won (nothing charged).
 *
 * Reply, then settle (docs/architecture.md): when a client waits for the reply and the cost is within the reservation
 * (so the close charges exactly that cost), the settlement is promised in the journal, the reply goes out, and the
 * close commits after it, held briefly so the next request's reservation shares its commit. A run that dies in
 * between leaves the promise for the job's re-run or the reaper to keep (settlement-journal.ts). A stream settles
 * first (`endStream`), unless its commit does not come in time.
 */
export async function settleCompleted(deps: SettlementDeps, pub: ReplyChannel, data: CompletedJob, row: CloseRow, payload: { cost: string }): Promise<void> {
  await pub.ensureOwned?.();
  // Granted from a lease in this process, its record may still be committing: the promise then carries it.
  const drawn = deps.lane.recordOf(data.generationId);
  // The record failed before any reply: its client was told 503, and there is nothing to settle.
  if (drawn?.lost) return;
  const withinReservation = data.reserved !== undefined && !money(row.cost).greaterThan(data.reserved);
  if (data.replyTo && data.mode === 'stream') {
    const done: StreamEnding = (charged, applied) => {
      payload.cost = charged.toFixed(10);
      return applied ? { type: 'done', payload } : { type: 'cancelled' };
    };
    return endStream(deps, pub, { ...data, replyTo: data.replyTo }, row, done, withinReservation, drawn);
  }
  if (!data.replyTo || !withinReservation) return replySettled(pub, payload, await deps.generations.finishRow(row));
  payload.cost = money(row.cost).toFixed(10);
  const message = { type: 'done', payload } as const;
  const record = drawn && !drawn.done ? drawn : undefined;
  try {
    await deps.settlements.promise(data.organizationId, { row, replyTo: data.replyTo, message, ...(record && { open: record.row, at: Date.now() }) });
  } catch (err) {
    // A cancel holds the generation: nothing was replied yet, so settle first; the first ending to commit stands.
    if (err instanceof PromiseRefused) return replySettled(pub, payload, await deps.generations.finishRow(row));
    // Redis refused the promise: nothing was replied yet, so settle first, as without it.
    deps.logger.warn('settlement not promised, settling before the reply', { generationId: data.generationId, err, trace_id: data.traceId });
    await replySettled(pub, payload, await deps.generations.finishRow(row));
    // Should Redis have kept it after all, it is spent now.
    await deps.settlements.kept(data.organizationId, data.generationId).catch(() => undefined);
    return;
  }
  await pub.send(message);
  if (record && !(await record.committed.then(() => true, () => false))) return keepAfterLostRecord(deps, data, record);
  settledAfterReply(deps, data, await deps.generations.finishRow(row, { hold: true }));
}

/** The final message of a settlement that committed before it: `done` with the charge, or `cancelled` when another ending won. */
async function replySettled(pub: ReplyChannel, payload: { cost: string }, outcome: { applied: boolean; charged: Decimal }): Promise<void> {
  payload.cost = outcome.charged.toFixed(10);
  await pub.send(outcome.applied ? { type: 'done', payload } : { type: 'cancelled' });
}

/** A promised settlement committed after its reply: the promise is spent (erased with the job's completion). */
function settledAfterReply(deps: SettlementDeps, data: JobIds, outcome: { applied: boolean }): void {
  // Another ending committed first (a cancel that raced the reply): it stands, and the client saw this one.
  if (!outcome.applied) deps.logger.warn('a generation replied to was ended otherwise first', { generationId: data.generationId, trace_id: data.traceId });
  // Not waited for: it leaves with the job's completion (SettlementJournal.erase).
  deps.settlements.erase(data.organizationId, data.generationId).catch((err: unknown) =>
    deps.logger.warn('settlement promise not erased (a read waiting for it erases it)', { generationId: data.generationId, err, trace_id: data.traceId }),
  );
}

/**
 * A stream's last message, given what its settlement charged and whether that ending was the generation's (`applied`);
 * null: nothing to send. When the settlement is promised instead, it is asked with the cost the commit will charge.
 */
export type StreamEnding = (charged: Decimal, applied: boolean) => GenerationEvent | null;

/**
 * Settles a stream cut after content reached its client (workers/services/text-executor.ts settlePartial): its charge
 * for what was produced, its ending (failed, or cancelled through the API) and its last message, in the order a complete
 * stream's are (`endStream`): content that reached a client is charged however the generation ends, so a commit that
 * does not come in time (PostgreSQL away as the client leaves) is promised and kept, by this run or whoever comes next,
 * like any other.
 */
export async function settleStreamEnding(deps: SettlementDeps, pub: ReplyChannel, data: CompletedJob, row: CloseRow, ending: StreamEnding): Promise<void> {
  await pub.ensureOwned?.();
  const drawn = deps.lane.recordOf(data.generationId);
  if (drawn?.lost) return;
  const withinReservation = data.reserved !== undefined && !money(row.cost ?? 0).greaterThan(data.reserved);
  return endStream(deps, pub, { ...data, replyTo: data.replyTo ?? null }, row, ending, withinReservation, drawn);
}

/**
 * A stream's ending. Its client already holds the content: only its last event waits for the commit, and the client's
 * next request then reserves, and starts, without a settlement ahead of it (committing after would land on that
 * request's first byte: measured again with leases, +1 ms at concurrency 1). A commit that fails or takes longer than
 * `STREAM_COMMIT_WAIT_MS` (PostgreSQL away) is promised instead, and the last event goes out on the promise, with the
 * cost when it is within the reservation (then charged exactly), else `failed` without it (the charge is not known yet,
 * the content is still charged). The commit is then awaited, and tried again while this run lives (`keepPromise`);
 * past that the reaper keeps the promise. Neither store reachable: the stream ends `failed` and its commit is awaited.
 */
async function endStream(
  deps: SettlementDeps,
  pub: ReplyChannel,
  data: JobIds & { replyTo: string | null },
  row: CloseRow,
  ending: StreamEnding,
  withinReservation: boolean,
  drawn: PendingRecord | undefined,
): Promise<void> {
  const commit = deps.generations.finishRow(row);
  const outcome = await outcomeWithin(commit, Math.min(STREAM_COMMIT_WAIT_MS, deps.config.syncWaitMs / 4));
  const settled = async (o: { applied: boolean; charged: Decimal }) => {
    const last = ending(o.charged, o.applied);
    if (last) await pub.send(last);
  };
  if (outcome) return settled(outcome);
  deps.logger.warn('a stream settlement not committed in time: its last event goes out on a promise', { generationId: data.generationId, trace_id: data.traceId });
  const pending = new AppError('SERVICE_UNAVAILABLE', `The stream has ended, but its charge is not recorded yet: it is recorded once the database is back (GET /v1/history/generations/${data.generationId})`, {
    metadata: { generation_id: data.generationId },
  }).toStored();
  const message: GenerationEvent | null = withinReservation ? ending(money(row.cost ?? 0), true) : { type: 'failed', error: pending };
  const record = drawn && !drawn.done ? drawn : undefined;
  try {
    await deps.settlements.promise(data.organizationId, { row, replyTo: data.replyTo, message: message ?? { type: 'cancelled' }, ...(record && { open: record.row, at: Date.now() }) });
  } catch (err) {
    // A cancel holds the generation: its ending and this commit race in the database, and the first one stands.
    if (err instanceof PromiseRefused) return settled(await commit);
    deps.logger.warn('a stream settlement neither committed nor promised', { generationId: data.generationId, err, trace_id: data.traceId });
    const unknown = new AppError('SERVICE_UNAVAILABLE', `The stream has ended, but its charge could not be recorded now: GET /v1/history/generations/${data.generationId} shows whether it was`, {
      metadata: { generation_id: data.generationId },
    }).toStored();
    await pub.send({ type: 'failed', error: unknown });
    settledAfterReply(deps, data, await commit);
    return;
  }
  if (message) await pub.send(message);
  if (record && !(await record.committed.then(() => true, () => false))) return keepAfterLostRecord(deps, data, record);
  const late = await commit.catch(() => undefined);
  if (late) settledAfterReply(deps, data, late);
  else await keepPromise(deps, data);
}

/** The outcome of `p` if it settles fulfilled within `ms`, else undefined (`p` goes on; a later rejection is the caller's). */
function outcomeWithin<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
  return Promise.race([p.catch(() => undefined), late]).finally(() => clearTimeout(timer));
}

/** Tries to keep a promise this run made: 9 tries over about a minute, then the reaper's turn. */
const KEEP_RETRY_MS = [250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000];

/**
 * Keeps the promise this run made whose commit failed (`SettlementJournal.keep`: the record of a drawn generation, the
 * close, the reply again): tried again with back-off while this run lives, then left to the reaper (which keeps the
 * promises of stuck generations before failing any, and those carrying a record from the journal itself).
 */
async function keepPromise(deps: SettlementDeps, data: JobIds): Promise<void> {
  for (const wait of [0, ...KEEP_RETRY_MS]) {
    if (wait) await new Promise((r) => setTimeout(r, wait));
    try {
      await deps.settlements.keep(data.organizationId, data.generationId, deps.generations);
      return;
    } catch (err) {
      deps.logger.warn('a promised settlement is not kept yet', { generationId: data.generationId, err, trace_id: data.traceId });
    }
  }
  throw new Error(`the promise of generation ${data.generationId} could not be kept: the reaper keeps it`);
}

/**
 * The record of a generation granted from a lease failed after its promise was made. When its `done` reached the client
 * first, the promise (which carries the record) is kept (`keepPromise`). Otherwise the client was told 503 first: the
 * promise is erased, nothing is charged.
 */
async function keepAfterLostRecord(deps: SettlementDeps, data: JobIds, record: PendingRecord): Promise<void> {
  if (!record.replied) {
    await deps.settlements.kept(data.organizationId, data.generationId);
    return;
  }
  await keepPromise(deps, data);
}

/**
 * A job run again (after a stall) whose earlier run promised its settlement and replied: that promise is kept (the
 * close committed, the reply sent again) instead of calling the provider a second time. True when it was.
 */
export function keptEarlierPromise(deps: SettlementDeps, job: Pick<Job<GenerationJobBase>, 'data' | 'attemptsStarted' | 'stalledCounter'>): Promise<boolean> {
  if (job.attemptsStarted <= 1 && !job.stalledCounter) return Promise.resolve(false);
  return deps.settlements.keep(job.data.organizationId, job.data.generationId, deps.generations);
}

