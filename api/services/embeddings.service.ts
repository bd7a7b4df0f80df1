import { AppError } from '../../shared/errors/app-error';
import type { Catalog } from '../../shared/catalog/catalog.types';
import { adapterByKind } from '../../shared/providers/registry';
import { embeddingInputTokens, embeddingsToCanonical } from '../../shared/formats/embeddings.mapper';
import { newId } from '../../shared/ids';
import { estimateTokens, maxBound, tokenCost } from '../../shared/billing/pricing';
import { QUEUES } from '../../shared/queue/queue-names';
import type { EmbeddingsJobData, EmbeddingsDonePayload } from '../../shared/queue/job-catalog';
import type { EmbeddingsBody } from '../../shared/schemas/embeddings.schema';
import type { Caller, Submission } from './generation-order';
import { awaitText, type WaitingServiceDeps } from './text-replies';

/** What an embeddings generation stores as its result (`replay` only when the request had an Idempotency-Key). */
export interface StoredEmbeddings {
  replay: EmbeddingsDonePayload;
}

export interface EmbeddingsDeps extends WaitingServiceDeps {
  catalog: Catalog;
}

/**
 * Embeddings up to the reply (POST /v1/embeddings): route, keep the endpoints that can take the input (images,
 * token arrays, dimensions), bound the cost, reserve and enqueue through the gateway, wait for the vectors.
 */
export class EmbeddingsService {
  constructor(private readonly d: EmbeddingsDeps) {}

  /** The worker's reply for a validated body, and the generation's id. */
  async embed(c: Caller, body: EmbeddingsBody): Promise<{ id: string; payload: EmbeddingsDonePayload }> {
    const submission = await this.order(c, body);
    const done = await awaitText<EmbeddingsDonePayload | StoredEmbeddings>(this.d.gateway, submission, this.d.syncWaitMs, async () => null);
    // A repeat with the same Idempotency-Key gets the record's result, where the first request's vectors were kept.
    return { id: submission.id, payload: 'replay' in done ? done.replay : (done as EmbeddingsDonePayload) };
  }

  /**
   * Routes, bounds, reserves and enqueues the embeddings of a validated body (sync for `embed`; `batch` for a line of
   * a batch, whose Idempotency-Key keeps the vectors on the record for its output).
   */
  async order(c: Caller, body: EmbeddingsBody, o: { mode: 'sync' | 'batch'; id?: string } = { mode: 'sync' }): Promise<Submission> {
    const canonical = embeddingsToCanonical(body);
    const route = await this.d.planner.plan({ principal: c.principal, model: body.model, provider: body.provider, modelType: 'embedding' });

    // Images only for endpoints marked multimodal; dimensions only up to an endpoint's maximum.
    let endpoints = route.endpoints;
    if (canonical.hasImages) endpoints = endpoints.filter((e) => e.multimodal);
    if (!endpoints.length) throw AppError.fromReason('parameters_unsupported', `Model ${body.model} does not accept images`, { candidates: route.endpoints.map((e) => ({ endpoint: e.slug, provider: e.provider, reason: 'multimodal', detail: 'not multimodal' })) });
    if (canonical.hasTokens) {
      // Token ids belong to a provider's own tokenizer: only adapters that send them upstream may serve them.
      const takesTokens = (e: { provider: string }) => {
        const provider = this.d.catalog.providers[e.provider];
        return provider !== undefined && adapterByKind[provider.kind]?.supports.embeddingTokens === true;
      };
      const fit = endpoints.filter(takesTokens);
      if (!fit.length) {
        throw AppError.fromReason('parameters_unsupported', `Model ${body.model} does not accept token arrays as input: send text`, {
          candidates: endpoints.map((e) => ({ endpoint: e.slug, provider: e.provider, reason: 'token_input', detail: 'provider takes no token arrays' })),
        });
      }
      endpoints = fit;
    }
    if (canonical.dimensions !== undefined) {
      const fit = endpoints.filter((e) => e.maxDimensions === undefined || canonical.dimensions! <= e.maxDimensions);
      if (!fit.length) {
        const max = Math.max(...endpoints.map((e) => e.maxDimensions ?? 0));
        throw AppError.validation([{ path: '/dimensions', message: `must be at most ${max} for ${body.model}` }]);
      }
      endpoints = fit;
    }
    const candidates = route.candidates.filter((c) => endpoints.some((e) => e.slug === c.slug));

    const tokens = canonical.inputs.reduce((n, i) => n + embeddingInputTokens(i, estimateTokens), 0);
    return this.d.gateway.order<EmbeddingsJobData>({
      queue: QUEUES.embeddings,
      id: o.id ?? newId('gen'),
      caller: c,
      requestType: 'embedding',
      apiType: 'embeddings',
      mode: o.mode,
      primary: route.primary,
      request: { model: body.model, inputs: canonical.inputs.length, encoding_format: body.encoding_format ?? 'float', dimensions: body.dimensions },
      candidates,
      dropped: route.plan.dropped,
      warnings: [],
      bound: maxBound(endpoints, (e) => tokenCost(e.price, { inputTokens: tokens, outputTokens: 0 })),
      job: () => ({ inputs: canonical.inputs, dimensions: canonical.dimensions, user: canonical.user, keepResult: c.idempotency !== undefined }),
    });
  }
}
