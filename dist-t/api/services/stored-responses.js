"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.StoredResponses = exports.inputItemId = exports.hasEnded = exports.askedModel = exports.unix = exports.finishedStatus = exports.storedRequest = void 0;
exports.isStored = isStored;
exports.usageOf = usageOf;
exports.publicError = publicError;
exports.responseObjectOf = responseObjectOf;
exports.unstoredBody = unstoredBody;
exports.withPublicIds = withPublicIds;
exports.asInput = asInput;
exports.turnInput = turnInput;
const app_error_1 = require("../../shared/errors/app-error");
const formats_1 = require("../../shared/formats");
const storedRequest = (g) => g.request;
exports.storedRequest = storedRequest;
/** The response's own texts are kept (not `store: false`, not deleted). */
function isStored(g) {
    const r = (0, exports.storedRequest)(g);
    return r.body.store !== false && r.deleted !== true;
}
const STATUS = {
    pending: 'queued',
    processing: 'in_progress',
    completed: 'completed',
    failed: 'failed',
    cancelled: 'cancelled',
};
/** OpenAI answers `incomplete` (not `completed`) for an answer cut by max_output_tokens or a content filter. */
const finishedStatus = (result) => ((0, formats_1.incompleteReason)(result) ? 'incomplete' : 'completed');
exports.finishedStatus = finishedStatus;
const unix = (d) => Math.floor(d.getTime() / 1000);
exports.unix = unix;
function usageOf(p) {
    return (0, formats_1.publicUsage)(p.result.usage, { totalRub: p.cost, inferenceRub: p.cost }, p.plugins ? { plugins: p.plugins } : undefined);
}
function publicError(e) {
    return { code: e.code, message: e.message, metadata: e.metadata };
}
/** The model a response names before any endpoint answered: what the caller asked for. */
const askedModel = (body) => body.model ?? body.models?.[0] ?? '';
exports.askedModel = askedModel;
/** A stored response as the Response object (GET /v1/responses/{id}, cancel). */
function responseObjectOf(g) {
    const record = (0, exports.storedRequest)(g);
    const payload = g.result;
    const result = payload ? withPublicIds(g.id, payload.result) : undefined;
    return (0, formats_1.buildResponseObject)({
        id: g.id,
        createdAt: (0, exports.unix)(g.createdAt),
        completedAt: g.completedAt ? (0, exports.unix)(g.completedAt) : null,
        model: payload?.model ?? g.model,
        status: g.status === 'completed' ? (0, exports.finishedStatus)(result) : STATUS[g.status],
        result,
        usage: payload ? usageOf(payload) : null,
        request: record.body,
        error: g.error ? publicError(g.error) : null,
        warnings: g.warnings ?? undefined,
    });
}
/** Whether a generation has ended (any way). */
const hasEnded = (g) => g.status !== 'pending' && g.status !== 'processing';
exports.hasEnded = hasEnded;
/** What a `store: false` (or deleted) response's record keeps of its body: the routing and limits, no text. */
function unstoredBody(body) {
    const { model, models, provider, stream, background, max_output_tokens, store } = body;
    return { model, models, provider, stream, background, max_output_tokens, store };
}
const OUTPUT_PREFIX = { message: 'msg', function_call: 'fc', reasoning: 'rs' };
const INPUT_PREFIX = { message: 'msg', function_call: 'fc', function_call_output: 'fco' };
/**
 * Public item ids name their response and position, so an `item_reference` leads straight to its stored response:
 * the n-th output item of a kind in `resp_X` is `<prefix>_X_<n>` (the ids the stream formatter gives too: counting
 * per kind keeps them equal however text and calls interleaved in the stream), input item n is `<prefix>_X_in<n>`.
 * Response ids are `resp_` + base62, so the parts never run into each other.
 */
const ITEM_ID = /^(msg|fc|rs|fco)_([A-Za-z0-9]+)_(in)?(\d{1,6})$/;
const suffixOf = (responseId) => responseId.replace(/^resp_/, '');
const inputItemId = (responseId, item, index) => `${INPUT_PREFIX[item.type]}_${suffixOf(responseId)}_in${index}`;
exports.inputItemId = inputItemId;
/** The result with the public ids of its output items (providers' own ids are neither unique nor stable). */
function withPublicIds(responseId, result) {
    const perKind = {};
    const id = (o) => `${OUTPUT_PREFIX[o.type]}_${suffixOf(responseId)}_${(perKind[o.type] = (perKind[o.type] ?? -1) + 1)}`;
    return { ...result, output: result.output.map((o) => ({ ...o, id: id(o) })) };
}
/** The output items of a stored response as input items of the next turn. */
function asInput(output) {
    return output.flatMap((o) => {
        if (o.type === 'message')
            return [{ type: 'message', role: 'assistant', content: o.content.map((c) => ({ type: 'output_text', text: c.text })) }];
        if (o.type === 'function_call')
            return [{ type: 'function_call', call_id: o.call_id, name: o.name, arguments: o.arguments }];
        // Providers get no earlier reasoning (as when a client replays a reasoning item).
        return [];
    });
}
/** This turn's own input items (without the history of previous_response_id), with their public ids. */
function turnInput(g) {
    const r = (0, exports.storedRequest)(g);
    const start = r.inputStart ?? 0;
    return r.input.slice(start).map((item, i) => ({ id: (0, exports.inputItemId)(g.id, item, i), item }));
}
/**
 * Stored responses as a principal may see them, scoped exactly as media and history are: an API key sees its own;
 * a personal-account token the whole organization (owner, admin) or its own (member: its keys' and key-less).
 * Everything else does not exist for the caller.
 */
class StoredResponses {
    db;
    constructor(db) {
        this.db = db;
    }
    async find(principal, id) {
        return this.db.generation.findFirst({
            where: {
                id,
                apiType: 'responses',
                organizationId: principal.organizationId,
                ...(principal.kind === 'key' ? { apiKeyId: principal.keyId } : principal.role === 'member' ? { userId: principal.userId } : {}),
            },
        });
    }
    /** A response whose texts are kept, or 404. */
    async get(principal, id) {
        const g = await this.find(principal, id);
        if (!g || !isStored(g))
            throw new app_error_1.AppError('NOT_FOUND', `Response ${id} not found`);
        return g;
    }
    /** The conversation so far of `previous_response_id`: its input and output items. */
    async history(principal, id) {
        const prev = await this.find(principal, id);
        if (!prev || !isStored(prev))
            throw new app_error_1.AppError('NOT_FOUND', `Previous response ${id} not found`);
        if (prev.status !== 'completed')
            throw new app_error_1.AppError('CONFLICT', `Previous response ${id} has not completed (status ${prev.status})`);
        return [...(0, exports.storedRequest)(prev).input, ...asInput(prev.result.result.output)];
    }
    /**
     * What each `item_reference` id stands for: an output item (or an input item) of a stored response the caller
     * may see. An id that names nothing the caller may see is a 400 naming it (OpenAI answers 400 too).
     */
    async resolve(principal, ids) {
        const out = new Map();
        const responses = new Map();
        for (const id of ids) {
            const m = ITEM_ID.exec(id);
            const notFound = () => app_error_1.AppError.validation([{ path: '/input', message: `no stored item '${id}'` }], `Item reference '${id}' not found`);
            if (!m)
                throw notFound();
            const responseId = `resp_${m[2]}`;
            if (!responses.has(responseId))
                responses.set(responseId, await this.find(principal, responseId));
            const g = responses.get(responseId);
            if (!g || !isStored(g))
                throw notFound();
            if (m[3]) {
                const found = turnInput(g).find((t) => t.id === id);
                if (!found)
                    throw notFound();
                out.set(id, [found.item]);
                continue;
            }
            const payload = g.result;
            if (g.status !== 'completed' || !payload)
                throw notFound();
            const item = withPublicIds(g.id, payload.result).output.find((o) => o.id === id);
            if (!item)
                throw notFound();
            out.set(id, asInput([item]));
        }
        return out;
    }
}
exports.StoredResponses = StoredResponses;
