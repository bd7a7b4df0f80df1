"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.responsesRoutes = responsesRoutes;
const express_1 = require("express");
const app_error_1 = require("../../shared/errors/app-error");
const ajv_1 = require("../../shared/schemas/ajv");
const responses_schema_1 = require("../../shared/schemas/responses.schema");
const formats_1 = require("../../shared/formats");
const api_keys_1 = require("../../shared/auth/api-keys");
const queue_names_1 = require("../../shared/queue/queue-names");
const background_streams_1 = require("../services/background-streams");
const response_stream_log_1 = require("../services/response-stream-log");
const stored_responses_1 = require("../services/stored-responses");
const text_service_1 = require("../services/text.service");
const caller_1 = require("./caller");
/**
 * OpenAI's Responses API through the queue: create, retrieve (or stream a background response again), its input
 * items, delete and cancel. Stored responses are scoped to the caller (StoredResponses).
 */
function responsesRoutes(ctx) {
    const r = (0, express_1.Router)();
    const stored = new stored_responses_1.StoredResponses(ctx.db);
    const log = new response_stream_log_1.ResponseStreamLog(ctx.redis, ctx.config.queuePrefix);
    const background = new background_streams_1.BackgroundStreams(ctx.db, log, ctx.logger, ctx.clock);
    const idOf = (req) => String(req.params.id);
    r.post('/v1/responses', ...ctx.guard, async (req, res) => {
        const body = (0, ajv_1.check)(responses_schema_1.responsesSchema, req.body ?? {});
        if (body.background && body.store === false) {
            throw app_error_1.AppError.validation([{ path: '/store', message: 'must not be false with background: true' }], 'A background response must be stored (store: false cannot be read back)');
        }
        const principal = res.locals.principal;
        const prior = body.previous_response_id ? await stored.history(principal, body.previous_response_id) : [];
        const references = await stored.resolve(principal, (0, formats_1.itemReferenceIds)(body.input));
        const canonical = (0, formats_1.responsesToCanonical)(body, prior, references);
        const { requestedParameters, warnings: formatWarnings, ...request } = canonical;
        const mode = body.stream ? 'stream' : body.background ? 'async' : 'sync';
        const newResponseId = `resp_${(0, api_keys_1.randomBase62)(24)}`;
        const createdAt = (0, stored_responses_1.unix)(ctx.clock());
        // `store: false`: the record keeps what billing and history need, not the conversation (nor the instructions).
        const record = body.store === false ? { body: (0, stored_responses_1.unstoredBody)(body), input: [] } : { body, input: request.input, inputStart: prior.length };
        const { submission, warnings } = await ctx.text.submit({
            id: newResponseId,
            ...(0, caller_1.callerOf)(res),
            ...(0, text_service_1.textRouting)(body),
            apiType: 'responses',
            mode,
            request,
            requestedParameters,
            warnings: formatWarnings,
            record,
            previousResponseId: body.previous_response_id ?? undefined,
            store: body.store !== false,
        });
        // A repeat with the same Idempotency-Key answers with the response of the first request.
        const id = submission.id;
        if (submission.replayed && body.store === false) {
            submission.detach();
            throw new app_error_1.AppError('CONFLICT', `Response ${id} of this Idempotency-Key was made with store: false: its text was not kept and cannot be replayed`, { metadata: { generation_id: id } });
        }
        const base = { id, createdAt, model: (0, stored_responses_1.askedModel)(body), request: body, warnings: warnings.length ? warnings : undefined };
        if (mode === 'async') {
            res.json((0, formats_1.buildResponseObject)({ ...base, status: 'queued' }));
            return;
        }
        if (mode === 'sync') {
            // A `store: false` record has no text to re-read: a lost reply is a 408 rather than an empty answer.
            const payload = await ctx.text.reply(submission, { reread: body.store !== false });
            res.json((0, formats_1.buildResponseObject)({
                ...base,
                model: payload.model,
                status: (0, stored_responses_1.finishedStatus)(payload.result),
                completedAt: (0, stored_responses_1.unix)(ctx.clock()),
                result: (0, stored_responses_1.withPublicIds)(id, payload.result),
                usage: (0, stored_responses_1.usageOf)(payload),
                warnings: payload.warnings.length ? payload.warnings : undefined,
            }));
            return;
        }
        const f = (0, formats_1.createResponsesStreamFormatter)(base);
        if (body.background) {
            // A background stream goes on when the client leaves; it (or anyone resuming) reads the relayed events.
            // A repeat (same Idempotency-Key) reads the first request's events instead of relaying them again.
            if (!submission.replayed)
                background.relay(submission, f, res.locals.traceId);
            else
                submission.detach();
            await background.serve(res, await stored.get(principal, id), -1);
            return;
        }
        await ctx.text.stream(res, submission, f.start().map(formats_1.encodeSse), {
            delta: (ev) => f.push(ev).map(formats_1.encodeSse),
            done: (p) => f.complete({ result: p.result, usage: (0, stored_responses_1.usageOf)(p), model: p.model, completedAt: (0, stored_responses_1.unix)(ctx.clock()), status: (0, stored_responses_1.finishedStatus)(p.result) }).map(formats_1.encodeSse),
            failed: (e, p) => f.fail((0, stored_responses_1.publicError)(e), p ? { usage: (0, stored_responses_1.usageOf)(p), model: p.model } : undefined).map(formats_1.encodeSse),
        });
    });
    r.get('/v1/responses/:id', ...ctx.guard, async (req, res) => {
        const q = (0, ajv_1.check)(responses_schema_1.retrieveResponseQuerySchema, { ...req.query }, { query: true });
        const g = await stored.get(res.locals.principal, idOf(req));
        if (!q.stream) {
            res.json((0, stored_responses_1.responseObjectOf)(g));
            return;
        }
        if (!(0, stored_responses_1.storedRequest)(g).body.background) {
            throw app_error_1.AppError.validation([{ path: '/stream', message: 'only a background response can be streamed again' }], `Response ${g.id} was not created with background: true and cannot be streamed`);
        }
        await background.serve(res, g, q.starting_after);
    });
    r.get('/v1/responses/:id/input_items', ...ctx.guard, async (req, res) => {
        const q = (0, ajv_1.check)(responses_schema_1.inputItemsQuerySchema, { ...req.query }, { query: true });
        const g = await stored.get(res.locals.principal, idOf(req));
        res.json((0, formats_1.inputItemPage)((0, stored_responses_1.turnInput)(g), q));
    });
    r.post('/v1/responses/:id/cancel', ...ctx.guard, async (req, res) => {
        const g = await stored.get(res.locals.principal, idOf(req));
        if (!(0, stored_responses_1.storedRequest)(g).body.background) {
            throw new app_error_1.AppError('BAD_REQUEST', `Only a background response can be cancelled: ${g.id} was not created with background: true`);
        }
        // Cancelling twice answers the cancelled response again; a response that ended otherwise cannot be cancelled.
        if (!(0, stored_responses_1.hasEnded)(g))
            await ctx.gateway.cancel(g.id, queue_names_1.QUEUES.text);
        const now = await ctx.db.generation.findUniqueOrThrow({ where: { id: g.id } });
        if (now.status !== 'cancelled')
            throw new app_error_1.AppError('BAD_REQUEST', `Cannot cancel a response that has ended (status ${(0, stored_responses_1.responseObjectOf)(now).status})`);
        res.json((0, stored_responses_1.responseObjectOf)(now));
    });
    r.delete('/v1/responses/:id', ...ctx.guard, async (req, res) => {
        const g = await stored.get(res.locals.principal, idOf(req));
        // A running response is cancelled first, so no later ending writes its text back.
        if (!(0, stored_responses_1.hasEnded)(g))
            await ctx.gateway.cancel(g.id, queue_names_1.QUEUES.text);
        const now = await ctx.db.generation.findUniqueOrThrow({ where: { id: g.id } });
        // The record stays for billing and history; the conversation and the answer's text go.
        const record = { body: (0, stored_responses_1.unstoredBody)((0, stored_responses_1.storedRequest)(now).body), input: [], deleted: true };
        const payload = now.result;
        await ctx.db.generation.update({
            where: { id: g.id },
            data: {
                request: record,
                ...(payload && { result: { ...payload, result: (0, formats_1.withoutText)(payload.result) } }),
            },
        });
        await log.forget(g.id);
        res.json({ id: g.id, object: 'response', deleted: true });
    });
    return r;
}
