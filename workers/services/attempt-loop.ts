import type { Job } from 'bullmq';
import { AppError } from '../../shared/errors/app-error';
import { endpointBySlug, type ResolvedEndpoint } from '../../shared/catalog/catalog-index';
import type { ProviderAdapter } from '../../shared/providers/adapter.types';
import type { UpstreamReply } from '../../shared/providers/api';
import type { HttpRequestSpec, UpstreamFailure } from '../../shared/providers/provider.types';
import { adapterFor } from '../../shared/providers/registry';
import { isUpstreamError } from '../../shared/providers/upstream-error';
import type { StatsSample } from '../../shared/routing/endpoint-stats';
import type { Attempt, GenerationJobBase, PlannedCandidate } from '../../shared/queue/job-catalog';
import type { GenerationEvent, GenerationPublisher } from '../../shared/queue/generation-bus';
import type { WorkerDeps } from '../worker-deps';
import { AttemptOrder, waitFor } from './attempt-order';
import { attemptOf, failedAttempt, notCalled } from './attempt-failures';
import { closeRowOf, type Finish } from '../../shared/services/generation.service';
import { money, type Decimal } from '../../shared/money';
import type { CloseRow } from '../../shared/billing/ledger';
import type { StopSignal } from '../../shared/stop';
import type { PendingRecord } from '../../shared/billing/pending-record';
import type { GenAiUsage } from '../../shared/telemetry/tracing';
import { AttemptSpan, tracedSettlement } from './job-spans';

/** One upstream call that did not answer (or an endpoint that could not be called): shared/queue/job-catalog.ts. */
export type { Attempt };

/** The endpoint one attempt calls, handed to the executor's own "call this endpoint" function. */
export interface EndpointCall {
  candidate: PlannedCandidate;
  resolved: ResolvedEndpoint;
  adapter: ProviderAdapter;
  /** Aborts the upstream call (cancel, timeout, client gone: shared/queue/cancel-channel.ts). */
  signal?: StopSignal;
}

/** The operation a job needs from an endpoint's adapter; an endpoint without it is recorded `unavailable`. */
export type Operation = 'text' | 'embeddings' | 'image' | 'video' | 'audio' | 'upscale';

/** Whether an endpoint's adapter can do the operation (a hosted image model runs as a media task). */
const SUPPORTS: Record<Operation, (adapter: ProviderAdapter) => boolean> = {
  text: (a) => a.text !== undefined,
  embeddings: (a) => a.embeddings !== undefined,
  image: (a) => a.media !== undefined || a.images !== undefined,
  video: (a) => a.media !== undefined,
  audio: (a) => a.media !== undefined,
  upscale: (a) => a.media !== undefined,
};

/** The job the loop runs for: its generation and its planned endpoints. */
export type AttemptJob = Pick<GenerationJobBase, 'generationId' | 'traceId' | 'traceparent' | 'candidates'>;

export interface AttemptLoopInput<T> {
  operation: Operation;
  /** Calls one endpoint. Throws an UpstreamError to fall back (any other error counts as a malformed reply). */
  call: (c: EndpointCall) => Promise<T>;
  signal?: StopSignal;
  /** Errors the loop does not judge: rethrown as they are (a stream cut after content; a media job's own retry). */
  passThrough?: (e: unknown) => boolean;
  /** Failed attempts are appended here (a typed-question job shares one list across its questions). */
  attempts?: Attempt[];
  /** Added to each recorded attempt. */
  question?: string;
  /**
   * The endpoint's health sample for an answer; default: time to the answer. `false`: the executor records it
   * itself later (a media task is judged when it finishes, not when it is created).
   */
  onAnswer?: ((value: T, started: number, finished: number) => Omit<StatsSample, 'ok' | 'at'>) | false;
  /** What an answer reports for its trace span (the answering model, the tokens): asked only when tracing is on. */
  usageOf?: (value: T) => GenAiUsage;
}

export type AttemptLoopOutcome<T> =
  | { kind: 'answered'; value: T; call: EndpointCall; attempts: Attempt[]; started: number; finished: number }
  /** The signal aborted; `cause` is what the aborted call threw (a stream cut mid-way carries its partial output). */
  | { kind: 'stopped'; attempts: Attempt[]; cause?: unknown }
  /** No endpoint answered: `last` is the failure that ended the loop, if any. */
  | { kind: 'failed'; attempts: Attempt[]; last?: UpstreamFailure };

/**
 * The one attempt loop every generation kind runs: the planned endpoints in order (an endpoint that asked to be
 * left alone via `Retry-After` is tried last, waited for, or skipped: attempt-order.ts), each within its
 * provider's concurrency cap, falling back while the failure allows it (upstream-error.ts `fallback`), every
 * failure recorded (the attempt, the endpoint's health, the metric, a log line).
 */
export async function runAttempts<T>(deps: WorkerDeps, job: AttemptJob, input: AttemptLoopInput<T>): Promise<AttemptLoopOutcome<T>> {
  const { signal } = input;
  const attempts = input.attempts ?? [];
  const record = (a: Omit<Attempt, 'question'>) => attempts.push(input.question === undefined ? a : { question: input.question, ...a });
  const retryUntil = (slug: string) => deps.stats.retryAfterUntil(slug);
  const order = new AttemptOrder(job.candidates, retryUntil);
  let last: UpstreamFailure | undefined;
  for (let next = order.next(); next; next = order.next()) {
    const { candidate } = next;
    if ('skipMs' in next) {
      record(notCalled(deps, candidate.slug, next.skipMs));
      continue;
    }
    await waitFor(next.waitMs, signal);
    if (signal?.aborted) return { kind: 'stopped', attempts };
    const resolved = endpointBySlug(deps.catalog, candidate.slug);
    const adapter = resolved && adapterFor(resolved.provider.kind);
    if (!resolved || !adapter || !SUPPORTS[input.operation](adapter)) {
      record({ provider: resolved?.provider.id ?? candidate.slug, endpoint: candidate.slug, reason: 'unavailable', message: `no ${input.operation} operation for this endpoint` });
      continue;
    }
    const call: EndpointCall = { candidate, resolved, adapter, signal };
    const span = AttemptSpan.start(deps.tracing, job, input.operation, call, input.question);
    const started = Date.now();
    try {
      const value = await input.call(call);
      const finished = Date.now();
      span?.answered(input.usageOf?.(value));
      if (input.onAnswer !== false) {
        const sample = input.onAnswer ? input.onAnswer(value, started, finished) : { ttftMs: finished - started };
        deps.stats.record(candidate.slug, { ok: true, at: finished, ...sample });
        deps.metrics.providerAttempts.inc({ provider: resolved.provider.id, outcome: 'ok' });
      }
      return { kind: 'answered', value, call, attempts, started, finished };
    } catch (e) {
      if (signal?.aborted) {
        span?.failed('stopped', 'stopped');
        return { kind: 'stopped', attempts, cause: e };
      }
      if (input.passThrough?.(e)) {
        span?.failed((e as Error).message, isUpstreamError(e) ? e.failure.reason : 'provider_error');
        throw e;
      }
      last = isUpstreamError(e) ? e.failure : { reason: 'malformed_reply', message: `unreadable reply: ${(e as Error).message}`, fallback: true };
      span?.failed(last.message, last.reason, last.status);
      record(attemptOf(resolved.provider.id, candidate.slug, last));
      const retryAfterMs = isUpstreamError(e) ? e.retryAfterMs : undefined;
      failedAttempt(deps, candidate.slug, resolved.provider.id, last, retryAfterMs);
      if (retryAfterMs !== undefined) order.failedWithRetryAfter(candidate, retryAfterMs);
      deps.logger.warn('provider attempt failed', {
        generationId: job.generationId,
        endpoint: candidate.slug,
        ...(input.question !== undefined && { question: input.question }),
        reason: last.reason,
        status: last.status,
        trace_id: job.traceId,
      });
      if (!last.fallback) break;
    }
  }
  return { kind: 'failed', attempts, last };
}

/** One upstream exchange with an endpoint, within its provider's concurrency cap (catalog `maxConcurrency`). */
export function upstreamRequest(deps: WorkerDeps, c: Pick<EndpointCall, 'resolved' | 'adapter'>, spec: HttpRequestSpec, signal?: StopSignal): Promise<UpstreamReply> {
  const { provider } = c.resolved;
  return deps.limiter.run(provider, () => deps.upstream.request(provider.baseUrl, spec, { timeoutMs: provider.timeoutMs, extractError: c.adapter.extractError, signal }));
}

/** Timings every ending records. */
export interface RunTiming {
  queueTimeMs: number;
  startedAt: number;
}

/**
 * How long a stream's last event waits for its settlement's commit (at most a quarter of SYNC_WAIT_MS) before it goes
 * out on a promise instead (reply, then settle): a PostgreSQL that is away or slow never holds a stream's ending.
 */
export const STREAM_COMMIT_WAIT_MS = 1_000;

/**
 * Ends a generation that answered: charges `finish.cost`, records the ending and sends `done` with the cost charged
 * (`payload.cost`), or `cancelled` when another ending won (nothing charged).
 *
 * Reply, then settle (docs/architecture.md): when a client waits for the reply and the cost is within the reservation
 * (so the close charges exactly that cost), the settlement is promised in the journal, the reply goes out, and the
 * close commits after it, held briefly so the next request's reservation shares its commit. A run that dies in
 * between leaves the promise for the job's re-run or the reaper to keep (settlement-journal.ts). A stream settles
 * first (`endStream`), unless its commit does not come in time.
 */
export function endCompleted(deps: WorkerDeps, pub: GenerationPublisher, data: CompletedJob, finish: CompletedFinish, payload: { cost: string }): Promise<void> {
  if (!deps.tracing || !data.traceparent) return settleCompleted(deps, pub, data, finish, payload);
  return tracedSettlement(deps.tracing, data, 'completed', () => settleCompleted(deps, pub, data, finish, payload).then(() => payload.cost));
}

type CompletedJob = Pick<GenerationJobBase, 'generationId' | 'organizationId' | 'replyTo' | 'reserved' | 'traceId' | 'traceparent'> & { mode?: string };
type CompletedFinish = Finish & { status: 'completed'; cost: NonNullable<Finish['cost']> };

async function settleCompleted(deps: WorkerDeps, pub: GenerationPublisher, data: CompletedJob, finish: CompletedFinish, payload: { cost: string }): Promise<void> {
  const row = closeRowOf(data.generationId, finish);
  // Granted from a lease in this process, its record may still be committing: the promise then carries it.
  const drawn = deps.lane.recordOf(data.generationId);
  // The record failed before any reply: its client was told 503, and there is nothing to settle.
  if (drawn?.lost) return;
  const withinReservation = data.reserved !== undefined && !money(row.cost).greaterThan(data.reserved);
  if (data.replyTo && data.mode === 'stream') return endStream(deps, pub, { ...data, replyTo: data.replyTo }, row, payload, withinReservation, drawn);
  if (!data.replyTo || !withinReservation) return replySettled(pub, payload, await deps.generations.finishRow(row));
  payload.cost = money(row.cost).toFixed(10);
  const message = { type: 'done', payload } as const;
  const record = drawn && !drawn.done ? drawn : undefined;
  try {
    await deps.settlements.promise(data.organizationId, { row, replyTo: data.replyTo, message, ...(record && { open: record.row, at: Date.now() }) });
  } catch (err) {
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
async function replySettled(pub: GenerationPublisher, payload: { cost: string }, outcome: { applied: boolean; charged: Decimal }): Promise<void> {
  payload.cost = outcome.charged.toFixed(10);
  await pub.send(outcome.applied ? { type: 'done', payload } : { type: 'cancelled' });
}

/** A promised settlement committed after its reply: the promise is spent (erased with the job's completion). */
function settledAfterReply(deps: WorkerDeps, data: Pick<GenerationJobBase, 'generationId' | 'organizationId' | 'traceId'>, outcome: { applied: boolean }): void {
  // Another ending committed first (a cancel that raced the reply): it stands, and the client saw this one.
  if (!outcome.applied) deps.logger.warn('a generation replied to was ended otherwise first', { generationId: data.generationId, trace_id: data.traceId });
  // Not waited for: it leaves with the job's completion (SettlementJournal.erase).
  deps.settlements.erase(data.organizationId, data.generationId).catch((err: unknown) =>
    deps.logger.warn('settlement promise not erased (a read waiting for it erases it)', { generationId: data.generationId, err, trace_id: data.traceId }),
  );
}

/**
 * A stream's ending. Its client already holds the content: only its last event waits for the commit, and the client's
 * next request then reserves, and starts, without a settlement ahead of it (committing after would land on that
 * request's first byte: measured again with leases, +1 ms at concurrency 1). A commit that fails or takes longer than
 * `STREAM_COMMIT_WAIT_MS` (PostgreSQL away) is promised instead, and the last event goes out on the promise: `done`
 * with the cost when it is within the reservation (then charged exactly), else `failed` (the charge is not known yet,
 * the content is still charged). The commit is then awaited, and tried again while this run lives (`keepPromise`);
 * past that the reaper keeps the promise. Neither store reachable: the stream ends `failed` and its commit is awaited.
 */
async function endStream(
  deps: WorkerDeps,
  pub: GenerationPublisher,
  data: Pick<GenerationJobBase, 'generationId' | 'organizationId' | 'traceId'> & { replyTo: string },
  row: CloseRow,
  payload: { cost: string },
  withinReservation: boolean,
  drawn: PendingRecord | undefined,
): Promise<void> {
  const commit = deps.generations.finishRow(row);
  const outcome = await outcomeWithin(commit, Math.min(STREAM_COMMIT_WAIT_MS, deps.config.syncWaitMs / 4));
  if (outcome) return replySettled(pub, payload, outcome);
  deps.logger.warn('a stream settlement not committed in time: its last event goes out on a promise', { generationId: data.generationId, trace_id: data.traceId });
  payload.cost = money(row.cost).toFixed(10);
  const pending = new AppError('SERVICE_UNAVAILABLE', `The answer is complete, but its charge is not recorded yet: it is recorded once the database is back (GET /v1/history/generations/${data.generationId})`, {
    metadata: { generation_id: data.generationId },
  }).toStored();
  const message: GenerationEvent = withinReservation ? { type: 'done', payload } : { type: 'failed', error: pending };
  const record = drawn && !drawn.done ? drawn : undefined;
  try {
    await deps.settlements.promise(data.organizationId, { row, replyTo: data.replyTo, message, ...(record && { open: record.row, at: Date.now() }) });
  } catch (err) {
    deps.logger.warn('a stream settlement neither committed nor promised', { generationId: data.generationId, err, trace_id: data.traceId });
    const unknown = new AppError('SERVICE_UNAVAILABLE', `The answer is complete, but its charge could not be recorded now: GET /v1/history/generations/${data.generationId} shows whether it was`, {
      metadata: { generation_id: data.generationId },
    }).toStored();
    await pub.send({ type: 'failed', error: unknown });
    settledAfterReply(deps, data, await commit);
    return;
  }
  await pub.send(message);
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
async function keepPromise(deps: WorkerDeps, data: Pick<GenerationJobBase, 'generationId' | 'organizationId' | 'traceId'>): Promise<void> {
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
async function keepAfterLostRecord(deps: WorkerDeps, data: Pick<GenerationJobBase, 'generationId' | 'organizationId' | 'traceId'>, record: PendingRecord): Promise<void> {
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
export function keptEarlierPromise(deps: WorkerDeps, job: Pick<Job<GenerationJobBase>, 'data' | 'attemptsStarted' | 'stalledCounter'>): Promise<boolean> {
  if (job.attemptsStarted <= 1 && !job.stalledCounter) return Promise.resolve(false);
  return deps.settlements.keep(job.data.organizationId, job.data.generationId, deps.generations);
}

/** Ends a generation as failed (nothing charged) and tells the waiting API process. */
export async function endFailed(deps: WorkerDeps, pub: GenerationPublisher, generationId: string, err: AppError, attempts: Attempt[], timing: RunTiming): Promise<void> {
  const error = err.toStored();
  await deps.generations.finish(generationId, {
    status: 'failed',
    error,
    routing: { attempts },
    attemptsCount: attempts.length,
    queueTimeMs: timing.queueTimeMs,
    generationTimeMs: Math.max(0, Date.now() - timing.startedAt),
  });
  await pub.send({ type: 'failed', error });
}

/** The job was told to stop before anything billable was produced: the generation ends cancelled, uncharged. */
export async function endStopped(deps: WorkerDeps, pub: GenerationPublisher, generationId: string, attempts: Attempt[], timing: RunTiming, traceId?: string): Promise<void> {
  deps.logger.info('generation stopped, upstream call aborted', { generationId, trace_id: traceId });
  const outcome = await deps.generations.finish(generationId, {
    status: 'cancelled',
    routing: { attempts },
    attemptsCount: attempts.length,
    queueTimeMs: timing.queueTimeMs,
    generationTimeMs: Math.max(0, Date.now() - timing.startedAt),
  });
  if (outcome.applied) await pub.send({ type: 'cancelled' });
}
