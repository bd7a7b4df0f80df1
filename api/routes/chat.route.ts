import { Router } from 'express';
import type { AppContext } from '../app-context';
import { check } from '../../shared/schemas/ajv';
import { chatSchema, type ChatBody } from '../../shared/schemas/chat.schema';
import { buildChatCompletion, chatToCanonical, chatUsage, createChatStreamFormatter, encodeChatSse, CHAT_STREAM_DONE } from '../../shared/formats';
import { newId } from '../../shared/auth/api-keys';
import type { TextDonePayload } from '../../workers/services/text-executor';
import { awaitText, completedText, pumpStream } from '../services/text-replies';

/** POST /v1/chat/completions: OpenAI's chat completions through the same text pipeline. */
export function chatRoutes(ctx: AppContext): Router {
  const r = Router();
  r.post('/v1/chat/completions', ...ctx.guard, async (req, res) => {
    const body = check<ChatBody>(chatSchema, req.body ?? {});
    const { requestedParameters, warnings: formatWarnings, ...request } = chatToCanonical(body);
    const created = Math.floor(ctx.clock().getTime() / 1000);
    const mode = body.stream ? 'stream' : 'sync';
    const { submission } = await ctx.text.submit({
      id: newId('gen'),
      idempotency: res.locals.idempotency,
      principal: res.locals.principal,
      traceId: res.locals.traceId,
      apiType: 'chat_completions',
      mode,
      model: body.model,
      models: body.models,
      provider: body.provider,
      request,
      requestedParameters,
      warnings: formatWarnings,
      record: { body },
      stickiness: body.prompt_cache_key ?? body.session_id ?? undefined,
      plugins: body.plugins,
      outputLimitField: body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
    });
    const usage = (p: TextDonePayload) => chatUsage(p.result.usage, { totalRub: p.cost }, p.plugins ? { plugins: p.plugins } : undefined);
    // A repeat with the same Idempotency-Key answers with the generation of the first request.
    const id = submission.id;
    // The warnings the generation keeps (history shows the same): the request's, the plan's, the answering endpoint's.
    const warningsOf = (p: TextDonePayload) => (p.warnings.length ? p.warnings : undefined);

    if (mode === 'sync') {
      const p = await awaitText(ctx.gateway, submission, ctx.config.syncWaitMs, () => completedText(ctx.db, id));
      res.json(buildChatCompletion({ id, created, model: p.model, result: p.result, usage: usage(p), logprobs: request.logprobs === true, warnings: warningsOf(p) }));
      return;
    }
    const f = createChatStreamFormatter({ id, created, model: body.model ?? body.models![0], includeUsage: body.stream_options?.include_usage === true });
    await pumpStream(res, ctx.gateway, submission, ctx.config.syncWaitMs, f.start().map(encodeChatSse), {
      delta: (ev) => f.push(ev).map(encodeChatSse),
      done: (p) => [...f.complete({ usage: usage(p), finishReason: p.result.finishReason, warnings: warningsOf(p) }).map(encodeChatSse), encodeChatSse(CHAT_STREAM_DONE)],
      failed: (e, p) => f.fail({ code: e.code, message: e.message, metadata: e.metadata }, p ? usage(p) : undefined).map(encodeChatSse),
    });
  });
  return r;
}
