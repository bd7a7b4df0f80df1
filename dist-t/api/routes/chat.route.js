"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.chatRoutes = chatRoutes;
const express_1 = require("express");
const text_service_1 = require("../services/text.service");
const caller_1 = require("./caller");
const ajv_1 = require("../../shared/schemas/ajv");
const chat_schema_1 = require("../../shared/schemas/chat.schema");
const formats_1 = require("../../shared/formats");
const api_keys_1 = require("../../shared/auth/api-keys");
/** POST /v1/chat/completions: OpenAI's chat completions through the same text pipeline. */
function chatRoutes(ctx) {
    const r = (0, express_1.Router)();
    r.post('/v1/chat/completions', ...ctx.guard, async (req, res) => {
        const body = (0, ajv_1.check)(chat_schema_1.chatSchema, req.body ?? {});
        const { requestedParameters, warnings: formatWarnings, ...request } = (0, formats_1.chatToCanonical)(body);
        const created = Math.floor(ctx.clock().getTime() / 1000);
        const mode = body.stream ? 'stream' : 'sync';
        const { submission } = await ctx.text.submit({
            id: (0, api_keys_1.newId)('gen'),
            ...(0, caller_1.callerOf)(res),
            ...(0, text_service_1.textRouting)(body),
            apiType: 'chat_completions',
            mode,
            request,
            requestedParameters,
            warnings: formatWarnings,
            record: { body },
            outputLimitField: body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
        });
        const usage = (p) => (0, formats_1.chatUsage)(p.result.usage, { totalRub: p.cost }, p.plugins ? { plugins: p.plugins } : undefined);
        // A repeat with the same Idempotency-Key answers with the generation of the first request.
        const id = submission.id;
        // The warnings the generation keeps (history shows the same): the request's, the plan's, the answering endpoint's.
        const warningsOf = (p) => (p.warnings.length ? p.warnings : undefined);
        if (mode === 'sync') {
            const p = await ctx.text.reply(submission);
            res.json((0, formats_1.buildChatCompletion)({ id, created, model: p.model, result: p.result, usage: usage(p), logprobs: request.logprobs === true, warnings: warningsOf(p) }));
            return;
        }
        const f = (0, formats_1.createChatStreamFormatter)({ id, created, model: body.model ?? body.models[0], includeUsage: body.stream_options?.include_usage === true });
        await ctx.text.stream(res, submission, f.start().map(formats_1.encodeChatSse), {
            delta: (ev) => f.push(ev).map(formats_1.encodeChatSse),
            done: (p) => [...f.complete({ usage: usage(p), finishReason: p.result.finishReason, warnings: warningsOf(p) }).map(formats_1.encodeChatSse), (0, formats_1.encodeChatSse)(formats_1.CHAT_STREAM_DONE)],
            failed: (e, p) => f.fail({ code: e.code, message: e.message, metadata: e.metadata }, p ? usage(p) : undefined).map(formats_1.encodeChatSse),
        });
    });
    return r;
}
