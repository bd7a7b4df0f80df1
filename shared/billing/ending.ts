/**
 * How every generation ends (docs/architecture.md "Endings and rules"): text, embeddings, typed questions, batch lines,
 * images and media, a cancel, an orphaned job, the reaper. A kind reports its outcome (`Ending`); `endGeneration` orders
 * the rest: the promise in the settlement journal, the reply, the commit of the close (the charge or release and the
 * record's final write, one transaction: Ledger.close), the erase. Nothing outside shared/billing/ closes a generation
 * or writes the journal (test/unit/each-rule-once.test.ts).
 */
import { AppError } from '../errors/app-error';
import type { Logger } from '../logger';
import { money, type Decimal } from '../money';
import { storedTokenCounts } from '../formats/format-utils';
import { GenerationPublisher, type GenerationEvent } from '../queue/generation-bus';
import type { GenerationJobBase } from '../queue/job-catalog';
import { ATTR, type Tracing, type TraceSpan } from '../telemetry/tracing';
import { closeRowOf, type CloseRow, type Finish, type Ledger, type NewGenerationIds } from './ledger';
import { PromiseRefused, type PromiseKeeper, type SettlementJournal, type PendingRecord } from './settlement-journal';

/**
 * How long a cut stream's last event waits for its settlement's commit (at most a quarter of SYNC_WAIT_MS) before it
 * goes out on a promise instead (reply, then settle): a PostgreSQL that is away or slow never holds a stream's ending.
 */
export const STREAM_COMMIT_WAIT_MS = 1_000;

/** What an ending needs of the process (the workers' WorkerDeps has it; the API builds its own). */
export interface EndingDeps {
  /** The ledger's closes (and the record of a drawn generation a kept promise writes). */
  ledger: PromiseKeeper & Pick<Ledger, 'discard' | 'writeNow'>;
  settlements: SettlementJournal;
  /** The records of the generations drawn from a lease and run here (shared/runtime/local-lane.ts). */
  lane: { recordOf(generationId: string): PendingRecord | undefined; buses: ConstructorParameters<typeof GenerationPublisher>[3] };
  logger: Logger;
  config: { syncWaitMs: number };
  /** Where a generation with no reply channel of its own is told about (the Redis publisher's connection). */
  redis: ConstructorParameters<typeof GenerationPublisher>[0];
  tracing?: Tracing;
}

/** Where the reply goes: the job's GenerationPublisher. */
export interface ReplyChannel {
  send(event: GenerationEvent): Promise<unknown>;
  /** Rejects once the run has lost its job (shared/queue/job-lock.ts): it then settles nothing and sends nothing more. */
  ensureOwned?(): Promise<void>;
}

/** The generation ended: the job's fields an ending reads (`replyTo` absent or null: nobody waits for a reply). */
export type EndingJob = Pick<GenerationJobBase, 'generationId' | 'organizationId'> &
  Partial<Pick<GenerationJobBase, 'replyTo' | 'reserved' | 'traceId' | 'traceparent'>>;

type JobIds = Pick<GenerationJobBase, 'generationId' | 'organizationId'> & { traceId?: string | null };

/** What a settlement came to: whether this ending was the generation's (the first), and what it charged. */
export interface Settled {
  applied: boolean;
  charged: Decimal;
}

/**
 * A generation's outcome as its kind reports it.
 * - `answer`: it answered; `done` carries `payload` (its `cost` set to what is charged). Reply, then settle when a
 *   client waits (a synchronous request or a stream) and the cost is within the reservation.
 * - `cut`: a stream cut after content reached its client: charged what it produced, its last message from the charge.
 * - `end`: anything else (a failure, a cancel, a media result): committed first; then `committed` (a callback queued,
 *   files discarded), then the reply `reply(settled)` (default: the ending's own message when it was the generation's).
 */
export type Ending =
  | { kind: 'answer'; finish: Finish & { status: 'completed' }; payload: { cost: string } }
  | { kind: 'cut'; finish: Finish; last: StreamEnding }
  | { kind: 'end'; finish: Finish; reply?: (s: Settled) => GenerationEvent | null; committed?: (s: Settled) => Promise<void> };

/**
 * Ends a generation: the one place a close is committed for a kind's outcome, under a `switchyard.settle` span when the
 * job is traced. `pub`: the reply channel (default: the job's `replyTo`). Resolves to the settlement, or null when it
 * was promised and is committed later (an answer replied to first).
 */
export async function endGeneration(deps: EndingDeps, pub: ReplyChannel | null, job: EndingJob, ending: Ending): Promise<Settled | null> {
  const channel = pub ?? new GenerationPublisher(deps.redis, job.replyTo ?? null, job.generationId, deps.lane.buses);
  const span = deps.tracing && job.traceparent ? settleSpan(deps.tracing, job, ending.finish) : undefined;
  const row = closeRowOf(job.generationId, ending.finish);
  let settled: Settled | null = null;
  try {
    if (ending.kind === 'cut') await endStream(deps, channel, job, row, ending.last);
    else if (ending.kind === 'answer') await settleAnswer(deps, channel, job, row, ending.payload);
    else {
      settled = await deps.ledger.close(row);
      await ending.committed?.(settled);
      const message = ending.reply ? ending.reply(settled) : settled.applied ? ownMessage(ending.finish) : null;
      if (message) await channel.send(message);
    }
  } catch (e) {
    span?.fail((e as Error).message, 'settlement_failed');
    span?.end();
    throw e;
  }
  if (span) {
    // What was charged: an answer's payload shows it, a cut stream's close row, any other ending its settlement.
    const cost = ending.kind === 'answer' ? ending.payload.cost : ending.kind === 'cut' ? (row.cost ?? '0') : settled!.applied ? settled!.charged.toFixed(10) : '0';
    span.set({ [ATTR.costRub]: Number(cost), ...usageAttributes(ending.finish.usage) });
    span.end();
  }
  return settled;
}

/** An ending's own final message: failed with its error, cancelled, or done with its result. */
function ownMessage(f: Finish): GenerationEvent {
  if (f.status === 'failed') return { type: 'failed', error: f.error! };
  if (f.status === 'cancelled') return { type: 'cancelled' };
  return { type: 'done', payload: f.result };
}

/**
 * Settles a generation that answered (a synchronous reply, a stream's last event): charges `row.cost`, records the
 * ending and sends `done` with the cost charged (`payload.cost`), or `cancelled` when another ending won (nothing
 * charged).
 *
 * Reply, then settle (docs/architecture.md): when a client waits for the reply and the cost is within the reservation
 * (so the close charges exactly that cost), the settlement is promised in the journal, the reply goes out, and the
 * close commits after it. A commit that fails (PostgreSQL away) is tried again while this run lives (`keepPromise`);
 * a run that dies in between leaves the promise for the job's re-run or the reaper to keep (settlement-journal.ts).
 */
async function settleAnswer(deps: EndingDeps, pub: ReplyChannel, data: EndingJob, row: CloseRow, payload: { cost: string }): Promise<void> {
  await pub.ensureOwned?.();
  // Granted from a lease in this process, its record may still be committing: the promise then carries it.
  const drawn = deps.lane.recordOf(data.generationId);
  // The record failed before any reply: its client was told 503, and there is nothing to settle.
  if (drawn?.lost) return;
  const withinReservation = data.reserved !== undefined && !money(row.cost ?? 0).greaterThan(data.reserved);
  if (!data.replyTo || !withinReservation) return replySettled(pub, payload, await deps.ledger.close(row));
  payload.cost = money(row.cost ?? 0).toFixed(10);
  const message = { type: 'done', payload } as const;
  const record = drawn && !drawn.done ? drawn : undefined;
  try {
    await deps.settlements.promise(data.organizationId, { row, replyTo: data.replyTo, message, ...(record && { open: record.row, at: Date.now() }) });
  } catch (err) {
    // A cancel holds the generation: nothing was replied yet, so settle first; the first ending to commit stands.
    if (err instanceof PromiseRefused) return replySettled(pub, payload, await deps.ledger.close(row));
    // Redis refused the promise: nothing was replied yet, so settle first, as without it.
    deps.logger.warn('settlement not promised, settling before the reply', { generationId: data.generationId, err, trace_id: data.traceId });
    await replySettled(pub, payload, await deps.ledger.close(row));
    // Should Redis have kept it after all, it is spent now.
    await deps.settlements.kept(data.organizationId, data.generationId).catch(() => undefined);
    return;
  }
  await pub.send(message);
  // A record still waiting for its group takes the close with it (written once, ended); else the close follows its commit.
  const closed = deps.ledger.close(row, { background: true, after: record?.committed }).then(() => true, () => false);
  if (record && !(await record.committed.then(() => true, () => false))) return keepAfterLostRecord(deps, data, record);
  // Committed after the reply (or kept first by whoever keeps promises: then this close applies nothing), the promise
  // is spent: erased with the job's completion (SettlementJournal.erase). A commit that fails is tried again.
  if (await closed) deps.settlements.erase(data.organizationId, data.generationId);
  else await keepPromise(deps, data);
}

/**
 * A stream's last message, given what its settlement charged and whether that ending was the generation's (`applied`);
 * null: nothing to send. When the settlement is promised instead, it is asked with the cost the commit will charge.
 */
export type StreamEnding = (charged: Decimal, applied: boolean) => GenerationEvent | null;

/** The final message of a settlement that committed before it: `done` with the charge, or `cancelled` when another ending won. */
async function replySettled(pub: ReplyChannel, payload: { cost: string }, outcome: { applied: boolean; charged: Decimal }): Promise<void> {
  payload.cost = outcome.charged.toFixed(10);
  await pub.send(outcome.applied ? { type: 'done', payload } : { type: 'cancelled' });
}

/**
 * The ending of a stream cut after content reached its client (charged what it produced, its ending failed or cancelled
 * through the API; a stream that answered ends as any answer, `settleAnswer`). Its client already holds the content:
 * its last event, from the charge, waits for the commit. Content that reached a client is charged however the
 * generation ends: a commit that fails or takes longer than `STREAM_COMMIT_WAIT_MS` (PostgreSQL away, as the client
 * leaves or not) is promised instead, and the last event goes out on the promise, with the cost when it is within the
 * reservation (then charged exactly), else `failed` without it (the charge is not known yet, the content is still
 * charged). The commit is then awaited, and tried again while this run lives (`keepPromise`); past that the reaper
 * keeps the promise. Neither store reachable: the stream ends `failed` and its commit is awaited.
 */
async function endStream(deps: EndingDeps, pub: ReplyChannel, data: EndingJob, row: CloseRow, ending: StreamEnding): Promise<void> {
  await pub.ensureOwned?.();
  // Granted from a lease in this process, its record may still be committing: a promise then carries it.
  const drawn = deps.lane.recordOf(data.generationId);
  // The record failed before any reply: its client was told 503, and there is nothing to settle.
  if (drawn?.lost) return;
  const commit = deps.ledger.close(row);
  // The commit's outcome if it comes within the wait, else undefined (the commit goes on; a later rejection is handled below).
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), Math.min(STREAM_COMMIT_WAIT_MS, deps.config.syncWaitMs / 4))));
  const outcome = await Promise.race([commit.catch(() => undefined), waited]).finally(() => clearTimeout(timer));
  if (outcome) {
    const last = ending(outcome.charged, outcome.applied);
    if (last) await pub.send(last);
    return;
  }
  deps.logger.warn('a stream settlement not committed in time: its last event goes out on a promise', { generationId: data.generationId, trace_id: data.traceId });
  const pending = new AppError('SERVICE_UNAVAILABLE', `The stream has ended, but its charge is not recorded yet: it is recorded once the database is back (GET /v1/history/generations/${data.generationId})`, {
    metadata: { generation_id: data.generationId },
  }).toStored();
  const withinReservation = data.reserved !== undefined && !money(row.cost ?? 0).greaterThan(data.reserved);
  const message: GenerationEvent | null = withinReservation ? ending(money(row.cost ?? 0), true) : { type: 'failed', error: pending };
  const record = drawn && !drawn.done ? drawn : undefined;
  try {
    await deps.settlements.promise(data.organizationId, { row, replyTo: data.replyTo ?? null, message: message ?? { type: 'cancelled' }, ...(record && { open: record.row, at: Date.now() }) });
  } catch (err) {
    // A cancel holds the generation: its ending and this commit race in the database, and the first one stands.
    if (err instanceof PromiseRefused) {
      const settled = await commit;
      const last = ending(settled.charged, settled.applied);
      if (last) await pub.send(last);
      return;
    }
    deps.logger.warn('a stream settlement neither committed nor promised', { generationId: data.generationId, err, trace_id: data.traceId });
    const unknown = new AppError('SERVICE_UNAVAILABLE', `The stream has ended, but its charge could not be recorded now: GET /v1/history/generations/${data.generationId} shows whether it was`, {
      metadata: { generation_id: data.generationId },
    }).toStored();
    await pub.send({ type: 'failed', error: unknown });
    await commit;
    // Should Redis have kept the promise after all, it is spent now.
    deps.settlements.erase(data.organizationId, data.generationId);
    return;
  }
  if (message) await pub.send(message);
  if (record && !(await record.committed.then(() => true, () => false))) return keepAfterLostRecord(deps, data, record);
  if (await commit.then(() => true, () => false)) deps.settlements.erase(data.organizationId, data.generationId);
  else await keepPromise(deps, data);
}

/** Tries to keep a promise this run made: 9 tries over about a minute, then the reaper's turn. */
const KEEP_RETRY_MS = [250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000];

/**
 * Keeps the promise this run made whose commit failed (`SettlementJournal.keep`: the record of a drawn generation, the
 * close, the reply again): tried again with back-off while this run lives, then left to the reaper (which keeps the
 * promises of stuck generations before failing any, and those carrying a record from the journal itself).
 */
async function keepPromise(deps: EndingDeps, data: JobIds): Promise<void> {
  for (const wait of [0, ...KEEP_RETRY_MS]) {
    if (wait) await new Promise((r) => setTimeout(r, wait));
    try {
      await deps.settlements.keep(data.organizationId, data.generationId, deps.ledger);
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
async function keepAfterLostRecord(deps: EndingDeps, data: JobIds, record: PendingRecord): Promise<void> {
  if (!record.replied) {
    await deps.settlements.kept(data.organizationId, data.generationId);
    return;
  }
  await keepPromise(deps, data);
}

/**
 * Keeps what another run promised for a generation, if anything: its settlement (the close committed, the reply sent
 * again), else a stream's checkpoint. The job re-run after a stall, the reaper, an orphaned job and a cancel ask first,
 * so a reply that showed a cost is charged that cost. True when there was one.
 */
export function keepPromised(deps: Pick<EndingDeps, 'ledger' | 'settlements'>, g: Pick<GenerationJobBase, 'generationId' | 'organizationId'>): Promise<boolean> {
  return deps.settlements.keep(g.organizationId, g.generationId, deps.ledger);
}

/**
 * Keeps a stream's checkpoint, if there is one (a stream whose worker did not end it: gone, frozen, or stuck): what had
 * reached the client by then is charged. `cancelled`: as a cancel through the API ends it. True when there was one.
 */
export function keepCheckpoint(deps: Pick<EndingDeps, 'ledger' | 'settlements'>, generationId: string, cancelled?: boolean): Promise<boolean> {
  return deps.settlements.keepCheckpoint(generationId, deps.ledger, { cancelled });
}

/**
 * Runs `decide` (a cancel) while no settlement can be promised ahead of it: fenced in the journal, so a worker settles
 * before it replies and the first commit stands. A generation whose worker already replied on a promise is not fenced:
 * that promise is kept now, and `decide` does not run (false).
 */
export async function underCancelFence(deps: EndingDeps, g: Pick<GenerationJobBase, 'generationId' | 'organizationId'>, decide: () => Promise<boolean>): Promise<boolean> {
  const fenced = await deps.settlements.fenceForCancel(g.organizationId, g.generationId).catch(() => false);
  if (!fenced && (await keepPromised(deps, g))) return false;
  try {
    return await decide();
  } finally {
    if (fenced) await deps.settlements.releaseCancel(g.organizationId, g.generationId).catch(() => undefined);
  }
}

/**
 * A generation refused before any provider was called (its job could not be enqueued): its reservation released and
 * its record gone, in one transaction (Ledger.discard). Should that fail, it ends failed, released, as before (or the
 * reaper ends it).
 */
export async function discardRefused(deps: EndingDeps, g: NewGenerationIds, onError: (err: unknown) => void): Promise<void> {
  await deps.ledger.discard({ id: g.id, organizationId: g.organizationId, idempotencyKey: g.idempotency?.key }).catch(async (err: unknown) => {
    onError(err);
    const error = new AppError('SERVICE_UNAVAILABLE', 'The queue is unavailable').toStored();
    await deps.ledger.close(closeRowOf(g.id, { status: 'failed', error })).catch(() => undefined);
  });
}


/**
 * The `switchyard.settle` span of an ending: its status, then (set by `endGeneration`) the cost charged
 * (`switchyard.cost_rub`; the ledger keeps the exact decimal), the usage it recorded (tokens as `gen_ai.usage.*`, a media
 * generation's units and seconds as `switchyard.usage.*`), and a failure's error code as `error.type`.
 */
function settleSpan(tracing: Tracing, job: EndingJob, finish: Finish): TraceSpan {
  const span = tracing.start('switchyard.settle', job.traceparent, { attributes: { [ATTR.generationId]: job.generationId, 'switchyard.status': finish.status } });
  if (finish.error) span.fail(finish.error.message, finish.error.code);
  return span;
}

/** A recorded usage as span attributes: its tokens (GenAI conventions) and a media generation's units and seconds. */
function usageAttributes(usage: unknown): Record<string, number | undefined> {
  if (!usage || typeof usage !== 'object') return {};
  const { input, output } = storedTokenCounts(usage);
  const u = usage as Record<string, unknown>;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  return {
    [ATTR.inputTokens]: input,
    [ATTR.outputTokens]: output,
    'switchyard.usage.input_units': n(u.input_units),
    'switchyard.usage.output_units': n(u.output_units),
    'switchyard.usage.duration_seconds': n(u.duration_seconds),
  };
}
