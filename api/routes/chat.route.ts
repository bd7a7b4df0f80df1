import { Router } from 'express';
import { textRouting, type TextRouteDeps } from '../services/text.service';
import { callerOf } from './route-helpers';
import { check } from '../../shared/schemas/ajv';
import { chatSchema, type ChatBody } from '../../shared/schemas/chat.schema';
import { chatToCanonical } from '../../shared/formats/chat.mapper';
import { chatUsage } from '../../shared/formats/format-utils';
import { createChatStreamFormatter, encodeChatSse, CHAT_STREAM_DONE } from '../../shared/formats/chat-stream.formatter';
import { chatCompletionOf } from '../services/text-replies';
import { newId } from '../../shared/ids';
import type { TextDonePayload } from '../../shared/queue/job-catalog';

/** POST /v1/chat/completions: OpenAI's chat completions through the same text pipeline. */
export function chatRoutes(ctx: TextRouteDeps): Router {
  const r = Router();
  r.post('/v1/chat/completions', ...ctx.guard, async (req, res) => {
    const body = check<ChatBody>(chatSchema, req.body ?? {});
    const { requestedParameters, warnings: formatWarnings, ...request } = chatToCanonical(body);
    const mode = body.stream ? 'stream' : 'sync';
    const { submission, route } = await ctx.text.submit({
      id: newId('gen'),
      ...callerOf(res),
      ...textRouting(body),
      apiType: 'chat_completions',
      mode,
      request,
      requestedParameters,
      warnings: formatWarnings,
      record: { body },
      outputLimitField: body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
    });
    const usage = (p: TextDonePayload) => chatUsage(p.result.usage, { totalRub: p.cost }, p.plugins ? { plugins: p.plugins } : undefined);
    // A repeat with the same Idempotency-Key answers with the generation of the first request.
    const id = submission.id;
    // The generation's created_at (a replay's is the first request's), as its record answers it.
    const created = Math.floor((submission.createdAt ?? ctx.clock()).getTime() / 1000);
    // The warnings the generation keeps (history shows the same): the request's, the plan's, the answering endpoint's.
    const warningsOf = (p: TextDonePayload) => (p.warnings.length ? p.warnings : undefined);

    if (mode === 'sync') {
      res.json(chatCompletionOf(id, created, request.logprobs === true, await ctx.text.reply(submission)));
      return;
    }
    // The head goes out before any endpoint answers: it names the model asked for (without inline options).
    const f = createChatStreamFormatter({ id, created, model: route.primary.id, includeUsage: body.stream_options?.include_usage === true });
    await ctx.text.stream(res, submission, f.start().map(encodeChatSse), {
      started: (model) => f.answeredBy(model),
      delta: (ev) => f.push(ev).map(encodeChatSse),
      done: (p) => {
        f.answeredBy(p.model);
        return [...f.complete({ usage: usage(p), finishReason: p.result.finishReason, serviceTier: p.result.serviceTier, warnings: warningsOf(p) }).map(encodeChatSse), encodeChatSse(CHAT_STREAM_DONE)];
      },
      failed: (e, p) => f.fail({ code: e.code, message: e.message, metadata: e.metadata }, p ? usage(p) : undefined).map(encodeChatSse),
    });
  });
  return r;
}
