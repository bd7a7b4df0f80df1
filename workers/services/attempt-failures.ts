import { AppError } from '../../shared/errors/app-error';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import type { UpstreamFailure } from '../../shared/providers/provider.types';
import type { Attempt } from '../../shared/queue/job-catalog';
import type { WorkerDeps } from '../worker-deps';
import type { ResolvedEndpoint } from '../../shared/catalog/catalog-index';
import type { ProviderAdapter } from '../../shared/providers/adapter.types';
import type { PlannedCandidate } from '../../shared/queue/job-catalog';

/** The endpoint one attempt calls, handed to the executor's own "call this endpoint" function. */
export interface EndpointCall {
  candidate: PlannedCandidate;
  resolved: ResolvedEndpoint;
  adapter: ProviderAdapter;
  /** Aborts the upstream call (cancel, timeout, client gone: shared/queue/generation-bus.ts). */
  signal?: AbortSignal;
}

/** The operation a job needs from an endpoint's adapter; an endpoint without it is recorded `unavailable`. */
export type Operation = 'text' | 'embeddings' | 'image' | 'video' | 'audio' | 'upscale';

export function attemptOf(provider: string, endpoint: string, f: Pick<UpstreamFailure, 'reason' | 'status' | 'message'>): Attempt {
  return { provider, endpoint, reason: f.reason, ...(f.status !== undefined && { status: f.status }), message: f.message };
}

/**
 * A failed upstream call, for the endpoint's health and the metrics. Input this endpoint cannot express was
 * never sent (`bad_request` without a status): it says nothing about the endpoint's health.
 */
export function failedAttempt(deps: WorkerDeps, slug: string, provider: string, f: Pick<UpstreamFailure, 'reason' | 'status'>, retryAfterMs?: number): void {
  deps.metrics.providerAttempts.inc({ provider, outcome: f.reason });
  if (f.reason === 'bad_request' && f.status === undefined) return;
  const at = Date.now();
  deps.stats.record(slug, { ok: false, at, ...(retryAfterMs !== undefined && { retryUntil: at + retryAfterMs }) });
}

/** An attempt not made: the endpoint's `Retry-After` is further away than a job waits. */
export function notCalled(deps: WorkerDeps, slug: string, waitMs: number): Omit<Attempt, 'question'> {
  const provider = endpointBySlug(deps.catalog, slug)?.provider.id ?? slug;
  return { provider, endpoint: slug, reason: 'rate_limited', message: `not called: the provider asked to wait ${Math.ceil(waitMs / 1000)} s (Retry-After)` };
}

/**
 * The one failure → error mapping, when no endpoint answered:
 * - every endpoint tried refused to express the input (e.g. a `file_url` part a chat-completions provider
 *   cannot take): the caller's input is the problem, 400 `validation_failed`;
 * - the provider refused the request itself (a 4xx that forbids falling back): 400 `provider_error`;
 * - every endpoint tried rate-limited the request: 429 `TOO_MANY_REQUESTS` (reason `all_providers_failed`, what the
 *   SDKs retry) with `Retry-After` (`metadata.retry_after_seconds`): the soonest an endpoint said it takes calls
 *   again, else 1 s;
 * - otherwise 502 `all_providers_failed`.
 */
export function failureError(deps: Pick<WorkerDeps, 'stats'>, attempts: Attempt[], last: UpstreamFailure | undefined): AppError {
  const tried = attempts.filter((a) => a.reason !== 'unavailable');
  const provider = attempts[attempts.length - 1]?.provider;
  if (tried.length > 0 && tried.every((a) => a.reason === 'bad_request' && a.status === undefined)) {
    return new AppError('BAD_REQUEST', `The input cannot be sent to any provider of this model: ${[...new Set(tried.map((a) => a.message))].join('; ')}`, {
      metadata: { reason: 'validation_failed', attempts },
    });
  }
  if (last && !last.fallback && last.reason === 'bad_request') {
    return new AppError('BAD_REQUEST', `The provider refused the request: ${last.message}`, {
      metadata: { reason: 'provider_error', raw: last.raw ?? last.message, provider_name: provider, attempts },
    });
  }
  const metadata = { attempts, raw: last?.raw ?? attempts[attempts.length - 1]?.message, provider_name: provider };
  if (tried.length > 0 && tried.every((a) => a.reason === 'rate_limited')) {
    const wait = retryAfterSeconds(tried.map((a) => a.endpoint), (slug) => deps.stats.retryAfterUntil(slug)) ?? 1;
    return new AppError('TOO_MANY_REQUESTS', `Every provider of this model is rate-limiting requests: retry after ${wait} s`, {
      metadata: { reason: 'all_providers_failed', ...metadata, retry_after_seconds: wait },
      headers: { 'Retry-After': String(wait) },
    });
  }
  const message = attempts.length ? `Every provider failed: ${[...new Set(attempts.map((a) => `${a.provider} (${a.reason})`))].join(', ')}` : 'No provider could take the request';
  return AppError.fromReason('all_providers_failed', message, metadata);
}

/** `Retry-After` seconds for an error: the soonest any of these endpoints accepts calls again, or undefined. */
export function retryAfterSeconds(slugs: readonly string[], retryAfterUntil: (slug: string) => number, now = Date.now()): number | undefined {
  const waits = slugs.map((s) => retryAfterUntil(s) - now).filter((ms) => ms > 0);
  return waits.length ? Math.max(1, Math.ceil(Math.min(...waits) / 1000)) : undefined;
}
