import type { EmbeddingRequest, EmbeddingResult } from '../../shared/providers/provider.types';
import { upstreamError } from '../../shared/providers/upstream-error';
import { tokenCost } from '../../shared/billing/pricing';
import { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { JobLock } from '../../shared/queue/job-lock';
import type { EmbeddingsDonePayload, EmbeddingsJobData } from '../../shared/queue/job-catalog';
import type { WorkerDeps } from '../worker-deps';
import { endGeneration } from '../../shared/billing/ending';
import { endFailed, endStopped, runAttempts, upstreamRequest, type EndpointCall, type RunTiming } from './attempt-loop';
import { failureError } from './attempt-failures';
import type { GenAiUsage } from '../../shared/telemetry/tracing';

/** Runs an embeddings job through the attempt loop (attempt-loop.ts), as text does. */
export class EmbeddingsExecutor {
  constructor(private readonly deps: WorkerDeps) {}

  /** `signal` aborts the upstream call when the generation is cancelled or timed out (shared/queue/generation-bus.ts). */
  async run(data: EmbeddingsJobData, timing: { enqueuedAt: number; startedAt: number }, signal?: AbortSignal, lock?: JobLock): Promise<void> {
    const pub = new GenerationPublisher(this.deps.redis, data.replyTo, data.generationId, this.deps.lane.buses, lock);
    const run: RunTiming = { queueTimeMs: Math.max(0, timing.startedAt - timing.enqueuedAt), startedAt: timing.startedAt };
    const out = await runAttempts(this.deps, data, {
      operation: 'embeddings',
      call: (c) => this.embed(data, c),
      signal,
      usageOf: embeddingUsage,
    });
    if (out.kind === 'stopped') return endStopped(this.deps, pub, data, out.attempts, run);
    if (out.kind === 'failed') return endFailed(this.deps, pub, data, failureError(this.deps, out.attempts, out.last), out.attempts, run);

    const result = out.value;
    const { candidate, resolved } = out.call;
    const { attempts } = out;
    const usage = { inputTokens: result.usage.inputTokens, outputTokens: 0 };
    const cost = tokenCost(resolved.endpoint.price, usage);
    const payload: EmbeddingsDonePayload = { result, model: candidate.model, endpoint: candidate.slug, provider: resolved.provider.id, cost: cost.toFixed(10), attempts };
    // What is charged is what the reply shows.
    await endGeneration(this.deps, pub, data, {
      kind: 'answer',
      payload,
      finish: {
        status: 'completed',
        cost,
        usage,
        result: { model: candidate.model, endpoint: candidate.slug, count: result.vectors.length, dimensions: result.vectors[0]?.length ?? 0, ...(data.keepResult && { replay: payload }) },
        model: candidate.model,
        provider: resolved.provider.id,
        finalEndpointSlug: candidate.slug,
        routing: { attempts, answeredBy: candidate.slug },
        finishReason: 'stop',
        attemptsCount: attempts.length + 1,
        latencyMs: run.queueTimeMs + (out.finished - out.started),
        queueTimeMs: run.queueTimeMs,
        generationTimeMs: out.finished - run.startedAt,
      },
    });
  }

  /** Calls one endpoint; a reply with another number of vectors than inputs is a malformed reply (fall back). */
  private async embed(data: EmbeddingsJobData, c: EndpointCall): Promise<EmbeddingResult> {
    const embeddings = c.adapter.embeddings!;
    const req = embeddingRequest(data, c.resolved.endpoint.upstreamModel);
    const reply = await upstreamRequest(this.deps, c, embeddings.buildRequest(req, c.resolved.provider.apiKey ?? ''), c.signal);
    const result = embeddings.parseResponse(reply.json, req);
    if (result.vectors.length !== data.inputs.length) {
      throw upstreamError({ kind: 'malformed', message: `expected ${data.inputs.length} vectors, got ${result.vectors.length}`, raw: reply.text.slice(0, 2000) });
    }
    return result;
  }
}

/** What an embeddings answer reports for its attempt's span (workers/services/job-spans.ts). */
function embeddingUsage(result: EmbeddingResult): GenAiUsage {
  return { responseModel: result.modelVersion, inputTokens: result.usage.inputTokens };
}

/** The provider request of an embeddings job for `model` (a direct call, or a line of a provider's batch). */
export const embeddingRequest = (data: EmbeddingsJobData, model: string): EmbeddingRequest => ({ model, inputs: data.inputs, dimensions: data.dimensions, user: data.user });
