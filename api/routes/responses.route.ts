import { Router, type Response } from 'express';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { responsesSchema, type ResponsesBody } from '../../shared/schemas/responses.schema';
import {
  buildResponseObject,
  createResponsesStreamFormatter,
  encodeSse,
  incompleteReason,
  itemReferenceIds,
  publicUsage,
  responsesToCanonical,
  type PublicError,
  type ResponseStatus,
} from '../../shared/formats';
import type { TextResult } from '../../shared/providers/provider.types';
import { randomBase62 } from '../../shared/auth/api-keys';
import type { Generation } from '../../shared/db/generated/client';
import type { TextDonePayload } from '../../workers/services/text-executor';
import { StoredResponses, storedRequest, withPublicIds, type StoredResponsesRequest } from '../services/stored-responses';
import { awaitText, completedText, pumpStream, type StoredError } from '../services/text-replies';

const STATUS: Record<Generation['status'], ResponseStatus> = {
  pending: 'queued',
  processing: 'in_progress',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** What a `store: false` response's record keeps of its body: the routing and limits, no text. */
function unstoredBody(body: ResponsesBody): ResponsesBody {
  const { model, models, provider, stream, background, max_output_tokens, store } = body;
  return { model, models, provider, stream, background, max_output_tokens, store };
}

/** OpenAI answers `incomplete` (not `completed`) for an answer cut by max_output_tokens or a content filter. */
const finishedStatus = (result: TextResult | undefined): 'completed' | 'incomplete' => (incompleteReason(result) ? 'incomplete' : 'completed');

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

function usageOf(p: TextDonePayload) {
  return publicUsage(p.result.usage, { totalRub: p.cost, inferenceRub: p.cost }, p.plugins ? { plugins: p.plugins } : undefined);
}

function publicError(e: StoredError): PublicError {
  return { code: e.code, message: e.message, metadata: e.metadata };
}

/** POST /v1/responses and GET /v1/responses/{id}: OpenAI's Responses API through the queue. */
export function responsesRoutes(ctx: AppContext): Router {
  const r = Router();

  const stored = new StoredResponses(ctx.db);

  function fromGeneration(g: Generation) {
    const record = storedRequest(g);
    const payload = g.result as unknown as TextDonePayload | null;
    const result = payload ? withPublicIds(g.id, payload.result) : undefined;
    return buildResponseObject({
      id: g.id,
      createdAt: unix(g.createdAt),
      completedAt: g.completedAt ? unix(g.completedAt) : null,
      model: payload?.model ?? g.model,
      status: g.status === 'completed' ? finishedStatus(result) : STATUS[g.status],
      result,
      usage: payload ? usageOf(payload) : null,
      request: record.body,
      error: g.error ? publicError(g.error as unknown as StoredError) : null,
      warnings: (g.warnings as string[] | null) ?? undefined,
    });
  }

  r.post('/v1/responses', ...ctx.guard, async (req, res: Response) => {
    const body = check<ResponsesBody>(responsesSchema, req.body ?? {});
    if (body.background && body.store === false) {
      throw AppError.validation([{ path: '/store', message: 'must not be false with background: true' }], 'A background response must be stored (store: false cannot be read back)');
    }
    const principal = res.locals.principal;
    const prior = body.previous_response_id ? await stored.history(principal, body.previous_response_id) : [];
    const references = await stored.resolve(principal, itemReferenceIds(body.input));
    const canonical = responsesToCanonical(body, prior, references);
    const { requestedParameters, warnings: formatWarnings, ...request } = canonical;
    const mode = body.stream ? 'stream' : body.background ? 'async' : 'sync';
    const id = `resp_${randomBase62(24)}`;
    const createdAt = unix(ctx.clock());
    // `store: false`: the record keeps what billing and history need, not the conversation (nor the instructions).
    const record: StoredResponsesRequest =
      body.store === false ? { body: unstoredBody(body), input: [] } : { body, input: request.input, inputStart: prior.length };
    const { submission, warnings } = await ctx.text.submit({
      id,
      principal,
      traceId: res.locals.traceId,
      apiType: 'responses',
      mode,
      model: body.model,
      models: body.models,
      provider: body.provider,
      request,
      requestedParameters,
      record,
      stickiness: body.prompt_cache_key ?? body.session_id ?? undefined,
      previousResponseId: body.previous_response_id ?? undefined,
      plugins: body.plugins,
      store: body.store !== false,
    });
    const allWarnings = [...formatWarnings, ...warnings];
    const base = { id, createdAt, model: body.model ?? body.models![0], request: body, warnings: allWarnings.length ? allWarnings : undefined };

    if (mode === 'async') {
      res.json(buildResponseObject({ ...base, status: 'queued' }));
      return;
    }
    if (mode === 'sync') {
      const payload = await awaitText(ctx.gateway, submission, ctx.config.syncWaitMs, () => completedText(ctx.db, id));
      res.json(
        buildResponseObject({
          ...base,
          model: payload.model,
          status: finishedStatus(payload.result),
          completedAt: unix(ctx.clock()),
          result: withPublicIds(id, payload.result),
          usage: usageOf(payload),
          warnings: payload.warnings.length || formatWarnings.length ? [...formatWarnings, ...payload.warnings] : undefined,
        }),
      );
      return;
    }
    const f = createResponsesStreamFormatter(base);
    await pumpStream(res, ctx.gateway, submission, ctx.config.syncWaitMs, f.start().map(encodeSse), {
      delta: (ev) => f.push(ev).map(encodeSse),
      done: (p) => f.complete({ result: p.result, usage: usageOf(p), model: p.model, completedAt: unix(ctx.clock()), status: finishedStatus(p.result) }).map(encodeSse),
      failed: (e, p) => f.fail(publicError(e), p ? { usage: usageOf(p), model: p.model } : undefined).map(encodeSse),
    });
  });

  r.get('/v1/responses/:id', ...ctx.guard, async (req, res) => {
    res.json(fromGeneration(await stored.get(res.locals.principal, String(req.params.id))));
  });

  return r;
}
