"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.runAttempts = runAttempts;
exports.upstreamRequest = upstreamRequest;
exports.attemptOf = attemptOf;
exports.failedAttempt = failedAttempt;
exports.failureError = failureError;
exports.endFailed = endFailed;
exports.endStopped = endStopped;
const app_error_1 = require("../../shared/errors/app-error");
const catalog_index_1 = require("../../shared/catalog/catalog-index");
const registry_1 = require("../../shared/providers/registry");
const upstream_error_1 = require("../../shared/providers/upstream-error");
const attempt_order_1 = require("./attempt-order");
/** Whether an endpoint's adapter can do the operation (a hosted image model runs as a media task). */
const SUPPORTS = {
    text: (a) => a.text !== undefined,
    embeddings: (a) => a.embeddings !== undefined,
    image: (a) => a.media !== undefined || a.images !== undefined,
    video: (a) => a.media !== undefined,
    audio: (a) => a.media !== undefined,
    upscale: (a) => a.media !== undefined,
};
/**
 * The one attempt loop every generation kind runs: the planned endpoints in order (an endpoint that asked to be
 * left alone via `Retry-After` is tried last, waited for, or skipped: attempt-order.ts), each within its
 * provider's concurrency cap, falling back while the failure allows it (upstream-error.ts `fallback`), every
 * failure recorded (the attempt, the endpoint's health, the metric, a log line).
 */
async function runAttempts(deps, job, input) {
    const { signal } = input;
    const attempts = input.attempts ?? [];
    const record = (a) => attempts.push(input.question === undefined ? a : { question: input.question, ...a });
    const retryUntil = (slug) => deps.stats.retryAfterUntil(slug);
    const order = new attempt_order_1.AttemptOrder(job.candidates, retryUntil);
    let last;
    for (let next = order.next(); next; next = order.next()) {
        const { candidate } = next;
        if ('skipMs' in next) {
            record(notCalled(deps, candidate.slug, next.skipMs));
            continue;
        }
        await (0, attempt_order_1.waitFor)(next.waitMs, signal);
        if (signal?.aborted)
            return { kind: 'stopped', attempts };
        const resolved = (0, catalog_index_1.endpointBySlug)(deps.catalog, candidate.slug);
        const adapter = resolved && (0, registry_1.adapterFor)(resolved.provider.kind);
        if (!resolved || !adapter || !SUPPORTS[input.operation](adapter)) {
            record({ provider: resolved?.provider.id ?? candidate.slug, endpoint: candidate.slug, reason: 'unavailable', message: `no ${input.operation} operation for this endpoint` });
            continue;
        }
        const call = { candidate, resolved, adapter, signal };
        const started = Date.now();
        try {
            const value = await input.call(call);
            const finished = Date.now();
            if (input.onAnswer !== false) {
                const sample = input.onAnswer ? input.onAnswer(value, started, finished) : { ttftMs: finished - started };
                deps.stats.record(candidate.slug, { ok: true, at: finished, ...sample });
                deps.metrics.providerAttempts.inc({ provider: resolved.provider.id, outcome: 'ok' });
            }
            return { kind: 'answered', value, call, attempts, started, finished };
        }
        catch (e) {
            if (signal?.aborted)
                return { kind: 'stopped', attempts, cause: e };
            if (input.passThrough?.(e))
                throw e;
            last = (0, upstream_error_1.isUpstreamError)(e) ? e.failure : { reason: 'malformed_reply', message: `unreadable reply: ${e.message}`, fallback: true };
            record(attemptOf(resolved.provider.id, candidate.slug, last));
            const retryAfterMs = (0, upstream_error_1.isUpstreamError)(e) ? e.retryAfterMs : undefined;
            failedAttempt(deps, candidate.slug, resolved.provider.id, last, retryAfterMs);
            if (retryAfterMs !== undefined)
                order.failedWithRetryAfter(candidate, retryAfterMs);
            deps.logger.warn('provider attempt failed', {
                generationId: job.generationId,
                endpoint: candidate.slug,
                ...(input.question !== undefined && { question: input.question }),
                reason: last.reason,
                status: last.status,
                trace_id: job.traceId,
            });
            if (!last.fallback)
                break;
        }
    }
    return { kind: 'failed', attempts, last };
}
/** One upstream exchange with an endpoint, within its provider's concurrency cap (catalog `maxConcurrency`). */
function upstreamRequest(deps, c, spec, signal) {
    const { provider } = c.resolved;
    return deps.limiter.run(provider, () => deps.upstream.request(provider.baseUrl, spec, { timeoutMs: provider.timeoutMs, extractError: c.adapter.extractError, signal }));
}
function attemptOf(provider, endpoint, f) {
    return { provider, endpoint, reason: f.reason, ...(f.status !== undefined && { status: f.status }), message: f.message };
}
/**
 * A failed upstream call, for the endpoint's health and the metrics. Input this endpoint cannot express was
 * never sent (`bad_request` without a status): it says nothing about the endpoint's health.
 */
function failedAttempt(deps, slug, provider, f, retryAfterMs) {
    deps.metrics.providerAttempts.inc({ provider, outcome: f.reason });
    if (f.reason === 'bad_request' && f.status === undefined)
        return;
    const at = Date.now();
    deps.stats.record(slug, { ok: false, at, ...(retryAfterMs !== undefined && { retryUntil: at + retryAfterMs }) });
}
/** An attempt not made: the endpoint's `Retry-After` is further away than a job waits. */
function notCalled(deps, slug, waitMs) {
    const provider = (0, catalog_index_1.endpointBySlug)(deps.catalog, slug)?.provider.id ?? slug;
    return { provider, endpoint: slug, reason: 'rate_limited', message: `not called: the provider asked to wait ${Math.ceil(waitMs / 1000)} s (Retry-After)` };
}
/**
 * The one failure → error mapping, when no endpoint answered:
 * - every endpoint tried refused to express the input (e.g. a `file_url` part a chat-completions provider
 *   cannot take): the caller's input is the problem, 400 `validation_failed`;
 * - the provider refused the request itself (a 4xx that forbids falling back): 400 `provider_error`;
 * - otherwise 502 `all_providers_failed`; when every provider rate-limited the request and one said when to
 *   come back, the error says so and carries that wait (`metadata.retry_after_seconds`, the `Retry-After` header).
 */
function failureError(deps, attempts, last) {
    const tried = attempts.filter((a) => a.reason !== 'unavailable');
    const provider = attempts[attempts.length - 1]?.provider;
    if (tried.length > 0 && tried.every((a) => a.reason === 'bad_request' && a.status === undefined)) {
        return new app_error_1.AppError('BAD_REQUEST', `The input cannot be sent to any provider of this model: ${[...new Set(tried.map((a) => a.message))].join('; ')}`, {
            metadata: { reason: 'validation_failed', attempts },
        });
    }
    if (last && !last.fallback && last.reason === 'bad_request') {
        return new app_error_1.AppError('BAD_REQUEST', `The provider refused the request: ${last.message}`, {
            metadata: { reason: 'provider_error', raw: last.raw ?? last.message, provider_name: provider, attempts },
        });
    }
    const retryUntil = (slug) => deps.stats.retryAfterUntil(slug);
    const wait = tried.length > 0 && tried.every((a) => a.reason === 'rate_limited') ? (0, attempt_order_1.retryAfterSeconds)(tried.map((a) => a.endpoint), retryUntil) : undefined;
    const message = wait !== undefined
        ? `Every provider of this model is rate-limiting requests: retry after ${wait} s`
        : attempts.length
            ? `Every provider failed: ${[...new Set(attempts.map((a) => `${a.provider} (${a.reason})`))].join(', ')}`
            : 'No provider could take the request';
    return app_error_1.AppError.fromReason('all_providers_failed', message, {
        attempts,
        raw: last?.raw ?? attempts[attempts.length - 1]?.message,
        provider_name: provider,
        ...(wait !== undefined && { retry_after_seconds: wait }),
    });
}
/** Ends a generation as failed (nothing charged) and tells the waiting API process. */
async function endFailed(deps, pub, generationId, err, attempts, timing) {
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
async function endStopped(deps, pub, generationId, attempts, timing, traceId) {
    deps.logger.info('generation stopped, upstream call aborted', { generationId, trace_id: traceId });
    const outcome = await deps.generations.finish(generationId, {
        status: 'cancelled',
        routing: { attempts },
        attemptsCount: attempts.length,
        queueTimeMs: timing.queueTimeMs,
        generationTimeMs: Math.max(0, Date.now() - timing.startedAt),
    });
    if (outcome.applied)
        await pub.send({ type: 'cancelled' });
}
