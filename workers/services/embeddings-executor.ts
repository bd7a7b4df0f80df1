import { AppError } from '../../shared/errors/app-error';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import { adapterFor } from '../../shared/providers/registry';
import { isUpstreamError } from '../../shared/providers/upstream-error';
import type { EmbeddingResult, UpstreamFailure } from '../../shared/providers/provider.types';
import { tokenCost } from '../../shared/billing/pricing';
import { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { EmbeddingsJobData } from '../../shared/queue/job-catalog';
import type { WorkerDeps } from '../worker-deps';
import { allFailed, notCalled, type Attempt } from './text-executor';
import { AttemptOrder, waitFor } from './attempt-order';

export interface EmbeddingsDonePayload {
  result: EmbeddingResult;
  model: string;
  endpoint: string;
  provider: string;
  cost: string;
  attempts: Attempt[];
}

/** Runs an embeddings job with the same fallback rule as text. */
export class EmbeddingsExecutor {
  constructor(private readonly deps: WorkerDeps) {}

  /** `signal` aborts the upstream call when the generation is cancelled or timed out (cancel-channel.ts). */
  async run(data: EmbeddingsJobData, timing: { enqueuedAt: number; startedAt: number }, signal?: AbortSignal): Promise<void> {
    const pub = new GenerationPublisher(this.deps.redis, data.replyTo, data.generationId);
    const queueTimeMs = Math.max(0, timing.startedAt - timing.enqueuedAt);
    const attempts: Attempt[] = [];
    let last: UpstreamFailure | undefined;
    const retryUntil = (slug: string) => this.deps.stats.retryAfterUntil(slug);
    const order = new AttemptOrder(data.candidates, retryUntil);
    for (let next = order.next(); next; next = order.next()) {
      const { candidate } = next;
      if ('skipMs' in next) {
        attempts.push(notCalled(this.deps.catalog, candidate.slug, next.skipMs));
        continue;
      }
      await waitFor(next.waitMs, signal);
      if (signal?.aborted) return this.stopped(data, attempts, pub, queueTimeMs, timing.startedAt);
      const resolved = endpointBySlug(this.deps.catalog, candidate.slug);
      const adapter = resolved && adapterFor(resolved.provider.kind);
      if (!resolved || !adapter?.embeddings) {
        attempts.push({ provider: resolved?.provider.id ?? candidate.slug, endpoint: candidate.slug, reason: 'unavailable', message: 'no embeddings adapter for this endpoint' });
        continue;
      }
      const started = Date.now();
      try {
        const req = { model: resolved.endpoint.upstreamModel, inputs: data.inputs, dimensions: data.dimensions, user: data.user };
        const spec = adapter.embeddings.buildRequest(req, resolved.provider.apiKey ?? '');
        const reply = await this.deps.limiter.run(resolved.provider, () =>
          this.deps.upstream.request(resolved.provider.baseUrl, spec, { timeoutMs: resolved.provider.timeoutMs, extractError: adapter.extractError, signal }),
        );
        const result = adapter.embeddings.parseResponse(reply.json, req);
        if (result.vectors.length !== data.inputs.length) throw new Error(`expected ${data.inputs.length} vectors, got ${result.vectors.length}`);
        const finished = Date.now();
        const cost = tokenCost(resolved.endpoint.price, { inputTokens: result.usage.inputTokens, outputTokens: 0 });
        const payload: EmbeddingsDonePayload = { result, model: candidate.model, endpoint: candidate.slug, provider: resolved.provider.id, cost: cost.toFixed(10), attempts };
        const outcome = await this.deps.generations.finish(data.generationId, {
          status: 'completed',
          cost,
          usage: { inputTokens: result.usage.inputTokens, outputTokens: 0 },
          result: { model: candidate.model, endpoint: candidate.slug, count: result.vectors.length, dimensions: result.vectors[0]?.length ?? 0, ...(data.keepResult && { replay: payload }) },
          model: candidate.model,
          provider: resolved.provider.id,
          finalEndpointSlug: candidate.slug,
          routing: { attempts, answeredBy: candidate.slug },
          finishReason: 'stop',
          attemptsCount: attempts.length + 1,
          latencyMs: queueTimeMs + (finished - started),
          queueTimeMs,
          generationTimeMs: finished - timing.startedAt,
        });
        this.deps.metrics.providerAttempts.inc({ provider: resolved.provider.id, outcome: 'ok' });
        this.deps.stats.record(candidate.slug, { ok: true, at: finished, ttftMs: finished - started });
        payload.cost = outcome.charged.toFixed(10); // what was charged is what the reply shows
        await pub.send(outcome.applied ? { type: 'done', payload } : { type: 'cancelled' });
        return;
      } catch (e) {
        if (signal?.aborted) return this.stopped(data, attempts, pub, queueTimeMs, timing.startedAt);
        last = isUpstreamError(e) ? e.failure : { reason: 'malformed_reply', message: `unreadable reply: ${(e as Error).message}`, fallback: true };
        attempts.push({ provider: resolved.provider.id, endpoint: candidate.slug, reason: last.reason, status: last.status, message: last.message });
        this.deps.metrics.providerAttempts.inc({ provider: resolved.provider.id, outcome: last.reason });
        const retryAfterMs = isUpstreamError(e) ? e.retryAfterMs : undefined;
        const at = Date.now();
        this.deps.stats.record(candidate.slug, { ok: false, at, ...(retryAfterMs !== undefined && { retryUntil: at + retryAfterMs }) });
        if (retryAfterMs !== undefined) order.failedWithRetryAfter(candidate, retryAfterMs);
        if (!last.fallback) break;
      }
    }
    const err =
      last && last.reason === 'bad_request'
        ? new AppError('BAD_REQUEST', `The provider refused the request: ${last.message}`, { metadata: { reason: 'provider_error', raw: last.raw ?? last.message, provider_name: attempts[attempts.length - 1]?.provider, attempts } })
        : allFailed(attempts, last, retryUntil);
    const error = { code: err.code, status: err.status, message: err.message, metadata: err.metadata };
    await this.deps.generations.finish(data.generationId, { status: 'failed', error, routing: { attempts }, attemptsCount: attempts.length, queueTimeMs, generationTimeMs: Date.now() - timing.startedAt });
    await pub.send({ type: 'failed', error });
  }

  /** Cancelled or timed out: the upstream call was aborted; the generation ends cancelled and uncharged. */
  private async stopped(data: EmbeddingsJobData, attempts: Attempt[], pub: GenerationPublisher, queueTimeMs: number, startedAt: number): Promise<void> {
    this.deps.logger.info('generation stopped, upstream call aborted', { generationId: data.generationId, trace_id: data.traceId });
    const outcome = await this.deps.generations.finish(data.generationId, { status: 'cancelled', routing: { attempts }, attemptsCount: attempts.length, queueTimeMs, generationTimeMs: Date.now() - startedAt });
    if (outcome.applied) await pub.send({ type: 'cancelled' });
  }
}
