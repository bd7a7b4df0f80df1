import { Router } from 'express';
import type { AppContext } from '../app-context';
import { ownerOf } from '../middleware/auth';
import { AppError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { embeddingsInputIssues, embeddingsSchema, type EmbeddingsBody } from '../../shared/schemas/embeddings.schema';
import { adapterFor } from '../../shared/providers/registry';
import { buildEmbeddingList, embeddingInputTokens, embeddingUsage, embeddingsToCanonical } from '../../shared/formats';
import { newId } from '../../shared/auth/api-keys';
import { estimateTokens, maxBound, tokenCost } from '../../shared/billing/pricing';
import { QUEUES } from '../../shared/queue/queue-names';
import type { EmbeddingsJobData } from '../../shared/queue/job-catalog';
import type { EmbeddingsDonePayload } from '../../workers/services/embeddings-executor';
import { awaitText } from '../services/text-replies';

/** What an embeddings generation stores as its result (`replay` only when the request had an Idempotency-Key). */
interface StoredEmbeddings {
  replay: EmbeddingsDonePayload;
}

/** POST /v1/embeddings: strings, string arrays and multimodal blocks; float or base64 (little-endian float32). */
export function embeddingsRoutes(ctx: AppContext): Router {
  const r = Router();
  r.post('/v1/embeddings', ...ctx.guard, async (req, res) => {
    const body = check<EmbeddingsBody>(embeddingsSchema, req.body ?? {});
    const issues = embeddingsInputIssues(body.input);
    if (issues.length) throw AppError.validation(issues);
    const canonical = embeddingsToCanonical(body);
    const principal = res.locals.principal;
    const route = await ctx.planner.plan({ principal, model: body.model, provider: body.provider, modelType: 'embedding' });

    // Images only for endpoints marked multimodal; dimensions only up to an endpoint's maximum.
    let endpoints = route.endpoints;
    if (canonical.hasImages) endpoints = endpoints.filter((e) => e.multimodal);
    if (!endpoints.length) throw AppError.fromReason('parameters_unsupported', `Model ${body.model} does not accept images`, { candidates: route.endpoints.map((e) => ({ endpoint: e.slug, provider: e.provider, reason: 'multimodal', detail: 'not multimodal' })) });
    if (canonical.hasTokens) {
      // Token ids belong to a provider's own tokenizer: only adapters that send them upstream may serve them.
      const takesTokens = (e: { provider: string }) => {
        const provider = ctx.catalog.providers[e.provider];
        return provider !== undefined && adapterFor(provider.kind)?.supports.embeddingTokens === true;
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
    const bound = maxBound(endpoints, (e) => tokenCost(e.price, { inputTokens: tokens, outputTokens: 0 }));
    const id = newId('gen');
    const submission = await ctx.gateway.submit<EmbeddingsJobData>(
      QUEUES.embeddings,
      {
        id,
        ...ownerOf(principal),
        model: route.primary.id,
        unifiedModelId: route.primary.id,
        modelDisplayName: route.primary.displayName,
        requestType: 'embedding',
        apiType: 'embeddings',
        responseMode: 'sync',
        request: { model: body.model, inputs: canonical.inputs.length, encoding_format: body.encoding_format ?? 'float', dimensions: body.dimensions },
        routing: { candidates: candidates.map((c) => c.slug), dropped: route.plan.dropped },
        traceId: res.locals.traceId,
        bound,
        idempotency: res.locals.idempotency,
      },
      () => ({
        generationId: id,
        ...ownerOf(principal),
        candidates,
        warnings: [],
        replyTo: ctx.gateway.replyChannel,
        traceId: res.locals.traceId,
        inputs: canonical.inputs,
        dimensions: canonical.dimensions,
        user: canonical.user,
        keepResult: res.locals.idempotency !== undefined,
      }),
      { listen: true },
    );
    const done = await awaitText<EmbeddingsDonePayload | StoredEmbeddings>(ctx.gateway, submission, ctx.config.syncWaitMs, async () => null);
    // A repeat with the same Idempotency-Key gets the record's result, where the first request's vectors were kept.
    const p = 'replay' in done ? done.replay : (done as EmbeddingsDonePayload);
    res.json(
      buildEmbeddingList({ id: submission.id, model: p.model, result: p.result, encoding: body.encoding_format ?? 'float', usage: embeddingUsage(p.result.usage.inputTokens, p.cost) }),
    );
  });
  return r;
}
