import { Router, type Response } from 'express';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { responsesSchema, type ResponsesBody } from '../../shared/schemas/responses.schema';
import {
  inputItemsQuerySchema,
  retrieveResponseQuerySchema,
  type InputItemsQuery,
  type RetrieveResponseQuery,
} from '../../shared/schemas/responses-query.schema';
import { buildResponseObject } from '../../shared/formats/response-object.mapper';
import { createResponsesStreamFormatter, encodeSse } from '../../shared/formats/responses-stream.formatter';
import { inputItemPage } from '../../shared/formats/response-input-items.mapper';
import { timedBase62 } from '../../shared/ids';
import { QUEUES } from '../../shared/queue/queue-names';
import { finishedStatus, hasEnded, publicError, responseObjectOf, storedRequest, turnInput, unix, usageOf, withPublicIds, orderResponse } from '../services/stored-responses';
import { callerOf } from './route-helpers';

/**
 * OpenAI's Responses API through the queue: create, retrieve (or stream a background response again), its input
 * items, delete and cancel. Stored responses are scoped to the caller (StoredResponses).
 */
export function responsesRoutes(ctx: AppContext): Router {
  const r = Router();
  const { responses: stored, backgroundStreams: background } = ctx;
  const idOf = (req: { params: Record<string, string | string[] | undefined> }) => String(req.params.id);

  r.post('/v1/responses', ...ctx.guard, async (req, res: Response) => {
    const body = check<ResponsesBody>(responsesSchema, req.body ?? {});
    if (body.background && body.store === false) {
      throw AppError.validation([{ path: '/store', message: 'must not be false with background: true' }], 'A background response must be stored (store: false cannot be read back)');
    }
    const principal = res.locals.principal;
    const mode = body.stream ? 'stream' : body.background ? 'async' : 'sync';
    const { submission, warnings, route, record } = await orderResponse({ text: ctx.text, stored }, callerOf(res), body, { id: `resp_${timedBase62()}`, mode });
    // A repeat with the same Idempotency-Key answers with the response of the first request.
    const id = submission.id;
    if (submission.replayed && body.store === false) {
      submission.detach();
      throw new AppError('CONFLICT', `Response ${id} of this Idempotency-Key was made with store: false: its text was not kept and cannot be replayed`, { metadata: { generation_id: id } });
    }
    // Until an endpoint answers, the response names the model asked for (without inline options), as its record does.
    // created_at is the generation's (a replay's is the first request's), as GET /v1/responses/{id} answers it.
    const base = { id, createdAt: unix(submission.createdAt ?? ctx.clock()), model: route.primary.id, request: record(route).body, warnings: warnings.length ? warnings : undefined };

    if (mode === 'async') {
      res.json(buildResponseObject({ ...base, status: 'queued' }));
      return;
    }
    if (mode === 'sync') {
      // A `store: false` record has no text to re-read: a lost reply is a 408 rather than an empty answer.
      const payload = await ctx.text.reply(submission, { reread: body.store !== false });
      res.json(
        buildResponseObject({
          ...base,
          model: payload.model,
          status: finishedStatus(payload.result),
          completedAt: unix(ctx.clock()),
          result: withPublicIds(id, payload.result),
          usage: usageOf(payload),
          warnings: payload.warnings.length ? payload.warnings : undefined,
        }),
      );
      return;
    }
    const f = createResponsesStreamFormatter(base);
    if (body.background) {
      // A background stream goes on when the client leaves; it (or anyone resuming) reads the relayed events.
      // A repeat (same Idempotency-Key) reads the first request's events instead of relaying them again.
      if (!submission.replayed) background.relay(submission, f, res.locals.traceId);
      else submission.detach();
      await submission.recorded?.();
      await background.serve(res, await stored.get(principal, id), -1);
      return;
    }
    await ctx.text.stream(res, submission, f.start().map(encodeSse), {
      delta: (ev) => f.push(ev).map(encodeSse),
      done: (p) => f.complete({ result: p.result, usage: usageOf(p), model: p.model, completedAt: unix(ctx.clock()), status: finishedStatus(p.result) }).map(encodeSse),
      failed: (e, p) => f.fail(publicError(e), p ? { usage: usageOf(p), model: p.model } : undefined).map(encodeSse),
    });
  });

  r.get('/v1/responses/:id', ...ctx.readGuard, async (req, res) => {
    const q = check<RetrieveResponseQuery>(retrieveResponseQuerySchema, { ...(req.query as Record<string, unknown>) }, { query: true });
    const g = await stored.get(res.locals.principal, idOf(req));
    if (!q.stream) {
      res.json(responseObjectOf(g));
      return;
    }
    if (!storedRequest(g).body.background) {
      throw AppError.validation([{ path: '/stream', message: 'only a background response can be streamed again' }], `Response ${g.id} was not created with background: true and cannot be streamed`);
    }
    await background.serve(res, g, q.starting_after);
  });

  r.get('/v1/responses/:id/input_items', ...ctx.readGuard, async (req, res) => {
    const q = check<InputItemsQuery>(inputItemsQuerySchema, { ...(req.query as Record<string, unknown>) }, { query: true });
    const g = await stored.get(res.locals.principal, idOf(req));
    res.json(inputItemPage(turnInput(g), q));
  });

  r.post('/v1/responses/:id/cancel', ...ctx.guard, async (req, res) => {
    const g = await stored.get(res.locals.principal, idOf(req));
    if (!storedRequest(g).body.background) {
      throw new AppError('BAD_REQUEST', `Only a background response can be cancelled: ${g.id} was not created with background: true`);
    }
    // Cancelling twice answers the cancelled response again; a response that ended otherwise cannot be cancelled.
    if (!hasEnded(g)) await ctx.gateway.cancel(g.id, QUEUES.text, { chargeStreamed: true });
    const now = await stored.reread(g.id);
    if (now.status !== 'cancelled') throw new AppError('BAD_REQUEST', `Cannot cancel a response that has ended (status ${responseObjectOf(now).status})`);
    res.json(responseObjectOf(now));
  });

  r.delete('/v1/responses/:id', ...ctx.guard, async (req, res) => {
    const g = await stored.get(res.locals.principal, idOf(req));
    // A running response is cancelled first, so no later ending writes its text back.
    if (!hasEnded(g)) await ctx.gateway.cancel(g.id, QUEUES.text, { chargeStreamed: true });
    // The record stays for billing and history; the conversation and the answer's text go.
    await stored.erase(g.id);
    await background.forget(g.id);
    res.json({ id: g.id, object: 'response', deleted: true });
  });

  return r;
}
