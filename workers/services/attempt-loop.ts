import { AppError } from '../../shared/errors/app-error';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import type { ProviderAdapter } from '../../shared/providers/adapter.types';
import type { UpstreamReply } from '../../shared/providers/api';
import type { HttpRequestSpec, UpstreamFailure } from '../../shared/providers/provider.types';
import { adapterByKind } from '../../shared/providers/registry';
import { isUpstreamError } from '../../shared/providers/upstream-error';
import type { StatsSample } from '../../shared/routing/endpoint-stats';
import type { Attempt, GenerationJobBase } from '../../shared/queue/job-catalog';
import type { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { WorkerDeps } from '../worker-deps';
import type { ProviderConfig } from '../../shared/catalog/catalog.types';
import { attemptOf, failedAttempt, notCalled, type EndpointCall, type Operation } from './attempt-failures';
import type { Finish } from '../../shared/billing/ledger';
import { endGeneration, type EndingJob } from '../../shared/billing/ending';
import type { GenAiUsage } from '../../shared/telemetry/tracing';
import { AttemptSpan } from './job-spans';

/** One upstream call that did not answer (or an endpoint that could not be called): shared/queue/job-catalog.ts. */
export type { Attempt };

/** The endpoint one attempt calls and what it is asked to do: attempt-failures.ts, where the job-spans floor finds them too. */
export type { EndpointCall, Operation };

/** The provider kinds whose adapter `can`: read once from the registry. */
function kindsThat(can: (adapter: ProviderAdapter) => boolean): ReadonlySet<string> {
  return new Set(Object.entries(adapterByKind).filter(([, adapter]) => adapter && can(adapter)).map(([kind]) => kind));
}

/** The provider kinds whose adapter can do each operation (a hosted image model runs as a media task). */
const SUPPORTS: Record<Operation, ReadonlySet<string>> = {
  text: kindsThat((a) => a.text !== undefined),
  embeddings: kindsThat((a) => a.embeddings !== undefined),
  image: kindsThat((a) => a.media !== undefined || a.images !== undefined),
  video: kindsThat((a) => a.media !== undefined),
  audio: kindsThat((a) => a.media !== undefined),
  upscale: kindsThat((a) => a.media !== undefined),
};

/** The job the loop runs for: its generation and its planned endpoints. */
export type AttemptJob = Pick<GenerationJobBase, 'generationId' | 'traceId' | 'traceparent' | 'candidates'>;

export interface AttemptLoopInput<T> {
  operation: Operation;
  /** Calls one endpoint. Throws an UpstreamError to fall back (any other error counts as a malformed reply). */
  call: (c: EndpointCall) => Promise<T>;
  signal?: AbortSignal;
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
 * left alone via `Retry-After` is tried last, waited for, or skipped: `AttemptOrder`), each within its
 * provider's concurrency cap, falling back while the failure allows it (upstream-error.ts `fallback`), every
 * failure recorded (the attempt, the endpoint's health, the metric, a log line).
 */
export async function runAttempts<T>(deps: WorkerDeps, job: AttemptJob, input: AttemptLoopInput<T>): Promise<AttemptLoopOutcome<T>> {
  const { signal } = input;
  const attempts = input.attempts ?? [];
  const record = (a: Omit<Attempt, 'question'>) => attempts.push(input.question === undefined ? a : { question: input.question, ...a });
  const order = new AttemptOrder(job.candidates, (slug) => deps.stats.retryAfterUntil(slug));
  let last: UpstreamFailure | undefined;
  for (let next = order.next(); next; next = order.next()) {
    const { candidate } = next;
    if ('skipMs' in next) {
      record(notCalled(deps, candidate.slug, next.skipMs));
      continue;
    }
    if (next.waitMs > 0) await waitFor(next.waitMs, signal);
    if (signal?.aborted) return { kind: 'stopped', attempts };
    const resolved = endpointBySlug(deps.catalog, candidate.slug);
    const adapter = resolved && adapterByKind[resolved.provider.kind];
    if (!resolved || !adapter || !SUPPORTS[input.operation].has(resolved.provider.kind)) {
      record({ provider: resolved?.provider.id ?? candidate.slug, endpoint: candidate.slug, reason: 'unavailable', message: `no ${input.operation} operation for this endpoint` });
      continue;
    }
    const call: EndpointCall = { candidate, resolved, adapter, signal };
    const span = deps.tracing && job.traceparent ? AttemptSpan.start(deps.tracing, job, input.operation, call, input.question) : undefined;
    const started = Date.now();
    // The call's latency, by its outcome (an answer's is observed where it came).
    const took = (outcome: string) => deps.metrics.providerLatency.observe({ provider: resolved.provider.id, endpoint: candidate.slug, outcome }, (Date.now() - started) / 1000);
    try {
      const value = await input.call(call);
      const finished = Date.now();
      deps.metrics.providerLatency.observe({ provider: resolved.provider.id, endpoint: candidate.slug, outcome: 'ok' }, (finished - started) / 1000);
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
        took(isUpstreamError(e) ? e.failure.reason : 'provider_error');
        span?.failed((e as Error).message, isUpstreamError(e) ? e.failure.reason : 'provider_error');
        throw e;
      }
      last = isUpstreamError(e) ? e.failure : { reason: 'malformed_reply', message: `unreadable reply: ${(e as Error).message}`, fallback: true };
      took(last.reason);
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
export function upstreamRequest(deps: WorkerDeps, c: Pick<EndpointCall, 'resolved' | 'adapter'>, spec: HttpRequestSpec, signal?: AbortSignal): Promise<UpstreamReply> {
  const { provider } = c.resolved;
  const options = { timeoutMs: provider.timeoutMs, extractError: c.adapter.extractError, signal };
  return withinCap(deps, provider, () => deps.upstream.request(provider.baseUrl, spec, options));
}

/** `call` within its provider's concurrency cap; a provider without a cap is called at once (nothing to count). */
export function withinCap<T>(deps: Pick<WorkerDeps, 'limiter'>, provider: Pick<ProviderConfig, 'id' | 'maxConcurrency'>, call: () => Promise<T>): Promise<T> {
  return provider.maxConcurrency ? deps.limiter.run(provider, call) : call();
}

/** Timings every ending records. */
export interface RunTiming {
  queueTimeMs: number;
  startedAt: number;
}

/** Ends a generation as failed (nothing charged) and tells the waiting API process. */
export async function endFailed(deps: WorkerDeps, pub: GenerationPublisher, job: EndingJob, err: AppError, attempts: Attempt[], timing: RunTiming): Promise<void> {
  const error = err.toStored();
  const finish: Finish = { status: 'failed', error, routing: { attempts }, attemptsCount: attempts.length, queueTimeMs: timing.queueTimeMs, generationTimeMs: Math.max(0, Date.now() - timing.startedAt) };
  await endGeneration(deps, pub, job, { kind: 'end', finish, reply: () => ({ type: 'failed', error }) });
}

/** The job was told to stop before anything billable was produced: the generation ends cancelled, uncharged. */
export async function endStopped(deps: WorkerDeps, pub: GenerationPublisher, job: EndingJob, attempts: Attempt[], timing: RunTiming): Promise<void> {
  deps.logger.info('generation stopped, upstream call aborted', { generationId: job.generationId, trace_id: job.traceId });
  const finish: Finish = { status: 'cancelled', routing: { attempts }, attemptsCount: attempts.length, queueTimeMs: timing.queueTimeMs, generationTimeMs: Math.max(0, Date.now() - timing.startedAt) };
  await endGeneration(deps, pub, job, { kind: 'end', finish });
}

/**
 * The longest a job waits for an endpoint's `Retry-After` when nothing else can answer (a longer wait fails
 * the job at once, with the wait in the error's `Retry-After`).
 */
export const RETRY_AFTER_MAX_WAIT_MS = 5_000;

export type NextAttempt<C> =
  | { candidate: C; waitMs: number }
  /** Asked not to be called for longer than we wait: not called, counted as rate limited. */
  | { candidate: C; skipMs: number };

/**
 * The order a job tries its planned endpoints in, honouring `Retry-After`: an endpoint that asked not to be
 * called yet is tried after every other one; when only such endpoints are left, the job waits for the first of
 * them up to RETRY_AFTER_MAX_WAIT_MS, or skips it. An endpoint that answered 429/503 with a short
 * `Retry-After` and was the last hope is tried once more after that wait.
 */
export class AttemptOrder<C extends { slug: string }> {
  private readonly pending: C[];
  private retried = false;

  constructor(
    candidates: readonly C[],
    /** Epoch ms before which the endpoint may not be called, or 0. */
    private readonly retryAfterUntil: (slug: string) => number,
    private readonly now: () => number = Date.now,
  ) {
    this.pending = [...candidates];
  }

  next(): NextAttempt<C> | undefined {
    if (this.pending.length === 0) return undefined;
    const now = this.now();
    const ready = this.pending.findIndex((c) => this.retryAfterUntil(c.slug) <= now);
    if (ready >= 0) return { candidate: this.pending.splice(ready, 1)[0], waitMs: 0 };
    // Every endpoint left is cooling down: the one free soonest.
    let soonest = 0;
    for (let i = 1; i < this.pending.length; i++) if (this.retryAfterUntil(this.pending[i].slug) < this.retryAfterUntil(this.pending[soonest].slug)) soonest = i;
    const candidate = this.pending.splice(soonest, 1)[0];
    const wait = this.retryAfterUntil(candidate.slug) - now;
    return wait <= RETRY_AFTER_MAX_WAIT_MS ? { candidate, waitMs: wait } : { candidate, skipMs: wait };
  }

  /** After `candidate` failed with a `Retry-After`: when it was the last hope, try it once more (after the wait). */
  failedWithRetryAfter(candidate: C, retryAfterMs: number): void {
    if (this.pending.length === 0 && !this.retried && retryAfterMs <= RETRY_AFTER_MAX_WAIT_MS) {
      this.retried = true;
      this.pending.push(candidate);
    }
  }
}

/** Waits `ms`, or less when `signal` aborts (the caller then sees `signal.aborted`). */
export function waitFor(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
