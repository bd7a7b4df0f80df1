import { AppError } from '../../shared/errors/app-error';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import type { ProviderAdapter } from '../../shared/providers/adapter.types';
import type { UpstreamReply } from '../../shared/providers/api';
import type { HttpRequestSpec, UpstreamFailure } from '../../shared/providers/provider.types';
import { adapterFor } from '../../shared/providers/registry';
import { isUpstreamError } from '../../shared/providers/upstream-error';
import type { StatsSample } from '../../shared/routing/endpoint-stats';
import type { Attempt, GenerationJobBase } from '../../shared/queue/job-catalog';
import type { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { WorkerDeps } from '../worker-deps';
import { AttemptOrder, waitFor, type EndpointCall, type Operation } from './attempt-order';
import { attemptOf, failedAttempt, notCalled } from './attempt-failures';
import { closeRowOf, type Finish } from '../../shared/services/generation.service';
import type { StopSignal } from '../../shared/stop';
import { settleCompleted, type CompletedJob } from '../../shared/billing/reply-then-settle';
import type { GenAiUsage } from '../../shared/telemetry/tracing';
import { AttemptSpan, tracedSettlement } from './job-spans';

/** One upstream call that did not answer (or an endpoint that could not be called): shared/queue/job-catalog.ts. */
export type { Attempt };

/** The endpoint one attempt calls and what it is asked to do: attempt-order.ts, where the job-spans floor finds them too. */
export type { EndpointCall, Operation };

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
    const took = (outcome: string) => deps.metrics.providerLatency.observe({ provider: resolved.provider.id, endpoint: candidate.slug, outcome }, (Date.now() - started) / 1000);
    try {
      const value = await input.call(call);
      const finished = Date.now();
      took('ok');
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
 * Ends a generation that answered: its settlement in the order of reply, then settle
 * (shared/billing/reply-then-settle.ts), under a `switchyard.settle` span when the job is traced.
 */
export function endCompleted(deps: WorkerDeps, pub: GenerationPublisher, data: CompletedJob & Pick<GenerationJobBase, 'traceparent'>, finish: CompletedFinish, payload: { cost: string }): Promise<void> {
  return tracedSettlement(deps.tracing, data, 'completed', () => settleCompleted(deps, pub, data, closeRowOf(data.generationId, finish), payload).then(() => ({ cost: payload.cost, usage: finish.usage })));
}

type CompletedFinish = Finish & { status: 'completed'; cost: NonNullable<Finish['cost']> };

/** Ends a generation as failed (nothing charged) and tells the waiting API process. */
export function endFailed(deps: WorkerDeps, pub: GenerationPublisher, job: EndingJob, err: AppError, attempts: Attempt[], timing: RunTiming): Promise<void> {
  const error = err.toStored();
  return tracedSettlement(deps.tracing, job, 'failed', async () => {
    await deps.generations.finish(job.generationId, {
      status: 'failed',
      error,
      routing: { attempts },
      attemptsCount: attempts.length,
      queueTimeMs: timing.queueTimeMs,
      generationTimeMs: Math.max(0, Date.now() - timing.startedAt),
    });
    await pub.send({ type: 'failed', error });
  }, { code: error.code, message: error.message });
}

/** The job was told to stop before anything billable was produced: the generation ends cancelled, uncharged. */
export function endStopped(deps: WorkerDeps, pub: GenerationPublisher, job: EndingJob, attempts: Attempt[], timing: RunTiming): Promise<void> {
  deps.logger.info('generation stopped, upstream call aborted', { generationId: job.generationId, trace_id: job.traceId });
  return tracedSettlement(deps.tracing, job, 'cancelled', async () => {
    const outcome = await deps.generations.finish(job.generationId, {
      status: 'cancelled',
      routing: { attempts },
      attemptsCount: attempts.length,
      queueTimeMs: timing.queueTimeMs,
      generationTimeMs: Math.max(0, Date.now() - timing.startedAt),
    });
    if (outcome.applied) await pub.send({ type: 'cancelled' });
  });
}

/** What an ending needs of its job: the generation, and the trace its ending span joins. */
export type EndingJob = Pick<GenerationJobBase, 'generationId' | 'traceId' | 'traceparent'>;
