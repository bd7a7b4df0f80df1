"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.PARAMETER_FIELDS = exports.REQUEST_PARAMETERS = exports.REASONING_EFFORT_MAP = void 0;
exports.roundDecimal = roundDecimal;
exports.moneyJson = moneyJson;
exports.publicLogprobs = publicLogprobs;
exports.canonicalReasoning = canonicalReasoning;
exports.requestWithout = requestWithout;
exports.requestedParameters = requestedParameters;
exports.finishTextRequest = finishTextRequest;
const money_1 = require("../billing/money");
/** Rounds a decimal string (or number) to `places` decimals, half away from zero, exactly (no float math). */
function roundDecimal(value, places = 6) {
    const d = (0, money_1.parseMoney)(value);
    if (!d)
        throw new TypeError(`Not a decimal number: ${String(value)}`);
    const rounded = d.toDecimalPlaces(places, money_1.Decimal.ROUND_HALF_UP);
    return rounded.isZero() ? '0' : rounded.toFixed();
}
/** A money amount as replies show it: a JSON number rounded to 6 places (decisions.md section 4). */
function moneyJson(value) {
    return Number(roundDecimal(value, 6));
}
const utf8Bytes = (token) => Array.from(Buffer.from(token, 'utf8'));
/** Canonical log-probabilities → OpenAI's shape (the same in chat `logprobs.content` and Responses `output_text.logprobs`). */
function publicLogprobs(logprobs) {
    return logprobs.map((l) => ({
        token: l.token,
        logprob: l.logprob,
        bytes: utf8Bytes(l.token),
        top_logprobs: l.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: utf8Bytes(t.token) })),
    }));
}
/**
 * Public effort levels → canonical ones. `none` turns reasoning off; `xhigh` (OpenAI's level above `high`) is
 * our `max`, the most an adapter can give.
 */
exports.REASONING_EFFORT_MAP = new Map([
    ['none', 'off'],
    ['minimal', 'minimal'],
    ['low', 'low'],
    ['medium', 'medium'],
    ['high', 'high'],
    ['xhigh', 'max'],
    ['max', 'max'],
]);
/** The public `reasoning` object (Responses, or chat's `reasoning` + `reasoning_effort`) → canonical; undefined when empty. */
function canonicalReasoning(r) {
    if (!r)
        return undefined;
    const out = {};
    const effort = r.effort ?? r.effort_level ?? undefined;
    if (effort !== undefined) {
        const mapped = exports.REASONING_EFFORT_MAP.get(effort);
        if (mapped === 'off')
            out.enabled = false;
        else if (mapped !== undefined)
            out.effort = mapped;
    }
    const summary = r.summary ?? r.generate_summary ?? undefined;
    if (summary !== undefined)
        out.summary = summary;
    if (r.max_tokens !== undefined)
        out.maxTokens = r.max_tokens;
    if (r.enabled !== undefined)
        out.enabled = r.enabled;
    else if (out.enabled === undefined && r.type === 'disabled')
        out.enabled = false;
    else if (out.enabled === undefined && (r.type === 'enabled' || r.type === 'adaptive'))
        out.enabled = true;
    return Object.keys(out).length > 0 ? out : undefined;
}
/**
 * The catalog `supports` vocabulary, in a fixed order: `requestedParameters` lists the optional features a
 * request uses, so routing can drop (or, with `require_parameters`, exclude) endpoints lacking them.
 */
exports.REQUEST_PARAMETERS = [
    'temperature',
    'top_p',
    'top_k',
    'presence_penalty',
    'frequency_penalty',
    'stop',
    'seed',
    'tools',
    'tool_choice',
    'parallel_tool_calls',
    'reasoning',
    'response_format',
    'logprobs',
    'top_logprobs',
    'max_tokens',
    'stream',
];
/**
 * Each parameter's canonical request fields: what is left out of the call to an endpoint that does not support
 * the parameter (the plan names them in this vocabulary, `PlannedCandidate.dropParams`). `max_tokens` and
 * `stream` are never left out: the reservation and the reply mode depend on them.
 */
exports.PARAMETER_FIELDS = {
    temperature: ['temperature'],
    top_p: ['topP'],
    top_k: ['topK'],
    presence_penalty: ['presencePenalty'],
    frequency_penalty: ['frequencyPenalty'],
    stop: ['stop'],
    seed: ['seed'],
    tools: ['tools', 'toolChoice', 'parallelToolCalls'],
    tool_choice: ['toolChoice'],
    parallel_tool_calls: ['parallelToolCalls'],
    reasoning: ['reasoning'],
    response_format: ['textFormat'],
    logprobs: ['logprobs', 'topLogprobs'],
    top_logprobs: ['topLogprobs'],
    max_tokens: [],
    stream: [],
};
/** The request for one endpoint: the upstream model name, without the parameters the endpoint does not support. */
function requestWithout(base, upstreamModel, drop) {
    const req = { ...base, model: upstreamModel };
    for (const p of drop)
        for (const f of exports.PARAMETER_FIELDS[p] ?? [])
            delete req[f];
    return req;
}
/** The parameters a canonical request uses. Defaults (`tool_choice: auto`, `parallel_tool_calls: true`) are not uses. */
function requestedParameters(req) {
    const used = new Set();
    if (req.temperature !== undefined)
        used.add('temperature');
    if (req.topP !== undefined)
        used.add('top_p');
    if (req.topK !== undefined)
        used.add('top_k');
    if (req.presencePenalty !== undefined)
        used.add('presence_penalty');
    if (req.frequencyPenalty !== undefined)
        used.add('frequency_penalty');
    if (req.stop !== undefined && req.stop.length > 0)
        used.add('stop');
    if (req.seed !== undefined)
        used.add('seed');
    if (req.tools !== undefined && req.tools.length > 0)
        used.add('tools');
    if (req.toolChoice !== undefined && req.toolChoice !== 'auto')
        used.add('tool_choice');
    if (req.parallelToolCalls === false)
        used.add('parallel_tool_calls');
    if (req.reasoning !== undefined && req.reasoning.enabled !== false)
        used.add('reasoning');
    if (req.textFormat !== undefined && req.textFormat.type !== 'text')
        used.add('response_format');
    if (req.logprobs === true)
        used.add('logprobs');
    if (req.logprobs === true && (req.topLogprobs ?? 0) > 0)
        used.add('top_logprobs');
    if (req.maxOutputTokens !== undefined)
        used.add('max_tokens');
    if (req.stream)
        used.add('stream');
    return exports.REQUEST_PARAMETERS.filter((p) => used.has(p));
}
/** Sets the fields both text formats share, then the parameters the request asks for: a mapper's last step. */
function finishTextRequest(req, body, wantsLogprobs) {
    if (wantsLogprobs) {
        req.logprobs = true;
        if (body.top_logprobs != null)
            req.topLogprobs = body.top_logprobs;
    }
    const user = body.user ?? body.safety_identifier ?? undefined;
    if (user)
        req.user = user;
    if (body.prompt_cache_key)
        req.promptCacheKey = body.prompt_cache_key;
    req.requestedParameters = requestedParameters(req);
    return req;
}
