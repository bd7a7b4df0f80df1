import { Router, type Response } from 'express';
import { textRouting, type TextRouteDeps } from '../services/text.service';
import { callerOf } from './caller';
import { AppError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { responsesSchema, type ResponsesBody } from '../../shared/schemas/responses.schema';
import {
  buildResponseObject,
  createResponsesStreamFormatter,
  encodeSse,
  publicUsage,
  responsesToCanonical,
  type PublicError,
  type ResponseStatus,
} from '../../shared/formats';
import type { InputItem, OutputItem } from '../../shared/providers/provider.types';
import { randomBase62 } from '../../shared/auth/api-keys';
import type { Generation } from '../../shared/db/generated/client';
import type { TextDonePayload } from '../../workers/services/text-executor';
import type { Principal } from '../middleware/auth';
import type { StoredError } from '../services/text-replies';

/** What a responses generation keeps in its `request` column: the body (echo fields) and the whole conversation. */
interface StoredResponsesRequest {
  body: ResponsesBody;
  input: InputItem[];
}

const STATUS: Record<Generation['status'], ResponseStatus> = {
  pending: 'queued',
  processing: 'in_progress',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

function usageOf(p: TextDonePayload) {
  return publicUsage(p.result.usage, { totalRub: p.cost, inferenceRub: p.cost }, p.plugins ? { plugins: p.plugins } : undefined);
}

function publicError(e: StoredError): PublicError {
  return { code: e.code, message: e.message, metadata: e.metadata };
}

/** The output items of a stored response, as input items of the next turn (previous_response_id). */
function asInput(output: OutputItem[]): InputItem[] {
  return output.flatMap((o): InputItem[] => {
    if (o.type === 'message') return [{ type: 'message', role: 'assistant', content: o.content.map((c) => ({ type: 'output_text', text: c.text })) }];
    if (o.type === 'function_call') return [{ type: 'function_call', call_id: o.call_id, name: o.name, arguments: o.arguments }];
    return [];
  });
}

/** POST /v1/responses and GET /v1/responses/{id}: OpenAI's Responses API through the queue. */
export function responsesRoutes(ctx: TextRouteDeps): Router {
  const r = Router();

  const findOwn = (principal: Principal, id: string) => ctx.text.ownResponse(principal, id);

  async function history(principal: Principal, id: string): Promise<InputItem[]> {
    const prev = await findOwn(principal, id);
    const stored = prev?.request as unknown as StoredResponsesRequest | undefined;
    if (!prev || !stored || stored.body.store === false) throw new AppError('NOT_FOUND', `Previous response ${id} not found`);
    if (prev.status !== 'completed') throw new AppError('CONFLICT', `Previous response ${id} has not completed (status ${prev.status})`);
    return [...stored.input, ...asInput((prev.result as unknown as TextDonePayload).result.output)];
  }

  function fromGeneration(g: Generation) {
    const stored = g.request as unknown as StoredResponsesRequest;
    const payload = g.result as unknown as TextDonePayload | null;
    return buildResponseObject({
      id: g.id,
      createdAt: unix(g.createdAt),
      completedAt: g.completedAt ? unix(g.completedAt) : null,
      model: payload?.model ?? g.model,
      status: STATUS[g.status],
      result: payload?.result,
      usage: payload ? usageOf(payload) : null,
      request: stored.body,
      error: g.error ? publicError(g.error as unknown as StoredError) : null,
      warnings: (g.warnings as string[] | null) ?? undefined,
    });
  }

  r.post('/v1/responses', ...ctx.guard, async (req, res: Response) => {
    const body = check<ResponsesBody>(responsesSchema, req.body ?? {});
    const principal = res.locals.principal;
    const prior = body.previous_response_id ? await history(principal, body.previous_response_id) : [];
    const canonical = responsesToCanonical(body, prior);
    const { requestedParameters, warnings: formatWarnings, ...request } = canonical;
    const mode = body.stream ? 'stream' : body.background ? 'async' : 'sync';
    const id = `resp_${randomBase62(24)}`;
    const createdAt = unix(ctx.clock());
    const record: StoredResponsesRequest = { body, input: request.input };
    const { submission, warnings } = await ctx.text.submit({
      id,
      ...callerOf(res),
      ...textRouting(body),
      apiType: 'responses',
      mode,
      request,
      requestedParameters,
      record,
      previousResponseId: body.previous_response_id ?? undefined,
    });
    const allWarnings = [...formatWarnings, ...warnings];
    const base = { id: submission.id, createdAt, model: body.model ?? body.models![0], request: body, warnings: allWarnings.length ? allWarnings : undefined };

    if (mode === 'async') {
      res.json(buildResponseObject({ ...base, status: 'queued' }));
      return;
    }
    if (mode === 'sync') {
      const payload = await ctx.text.reply(submission);
      res.json(
        buildResponseObject({
          ...base,
          model: payload.model,
          status: 'completed',
          completedAt: unix(ctx.clock()),
          result: payload.result,
          usage: usageOf(payload),
          warnings: payload.warnings.length || formatWarnings.length ? [...formatWarnings, ...payload.warnings] : undefined,
        }),
      );
      return;
    }
    const f = createResponsesStreamFormatter(base);
    await ctx.text.stream(res, submission, f.start().map(encodeSse), {
      delta: (ev) => f.push(ev).map(encodeSse),
      done: (p) => f.complete({ result: p.result, usage: usageOf(p), model: p.model, completedAt: unix(ctx.clock()) }).map(encodeSse),
      failed: (e, p) => f.fail(publicError(e), p ? { usage: usageOf(p), model: p.model } : undefined).map(encodeSse),
    });
  });

  r.get('/v1/responses/:id', ...ctx.guard, async (req, res) => {
    const g = await findOwn(res.locals.principal, String(req.params.id));
    if (!g || (g.request as unknown as StoredResponsesRequest).body.store === false) throw new AppError('NOT_FOUND', `Response ${req.params.id} not found`);
    res.json(fromGeneration(g));
  });

  return r;
}
