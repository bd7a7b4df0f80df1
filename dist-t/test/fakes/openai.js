"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.openai = void 0;
/**
 * OpenAI wire format, mounted at `/openai/v1`: chat completions, Responses API, embeddings,
 * image generations and the model list.
 */
const common_1 = require("./common");
const synth_1 = require("./synth");
const ERRORS = {
    400: ['invalid_request_error', null, 'Invalid request.'],
    401: ['invalid_request_error', 'invalid_api_key', 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.'],
    403: ['invalid_request_error', 'unsupported_country_region_territory', 'Country, region, or territory not supported'],
    404: ['invalid_request_error', 'model_not_found', 'The model does not exist or you do not have access to it.'],
    429: ['requests', 'rate_limit_exceeded', 'Rate limit reached for requests per min (RPM). Please try again in 1s.'],
    500: ['server_error', null, 'The server had an error while processing your request. Sorry about that!'],
    503: ['server_error', null, 'The engine is currently overloaded, please try again later.'],
};
function error(ctx, status, message, param = null, code) {
    const [type, defCode, defMessage] = ERRORS[status] ?? (status >= 500 ? ERRORS[500] : ERRORS[400]);
    (0, common_1.sendRaw)(ctx, status, { error: { message: message ?? defMessage, type, param, code: code === undefined ? defCode : code } });
}
const missing = (ctx, param) => error(ctx, 400, `Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
const invalid = (ctx, param, message) => error(ctx, 400, message, param, 'invalid_value');
// ---------- shared rendering ----------
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o3-mini', 'text-embedding-3-small', 'text-embedding-3-large', 'dall-e-3', 'gpt-image-1'];
function logprobItem(p, k) {
    return {
        token: p.token,
        logprob: p.logprob,
        bytes: (0, synth_1.utf8Bytes)(p.token),
        top_logprobs: p.top.slice(0, k).map(([token, logprob]) => ({ token, logprob, bytes: (0, synth_1.utf8Bytes)(token) })),
    };
}
/** Text of a message `content`: a string, or the `text` of its text parts. */
function contentText(content) {
    if (typeof content === 'string')
        return content;
    let out = '';
    for (const part of (0, common_1.arr)(content)) {
        const p = (0, common_1.obj)(part);
        out += (0, common_1.str)(p.text) ?? (0, common_1.str)(p.refusal) ?? (typeof p.output === 'string' ? p.output : '');
    }
    return out;
}
// ---------- chat completions ----------
const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];
function chatUsage(c) {
    const u = c.usage;
    return {
        prompt_tokens: u.prompt,
        completion_tokens: u.completion,
        total_tokens: u.prompt + u.completion,
        prompt_tokens_details: { cached_tokens: u.cached, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: u.reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    };
}
const chatFinish = (c) => (c.finish === 'tool' ? 'tool_calls' : c.finish === 'length' ? 'length' : 'stop');
async function chat(ctx) {
    const b = (0, common_1.obj)(ctx.body);
    const model = (0, common_1.str)(b.model);
    if (!model)
        return error(ctx, 400, 'you must provide a model parameter', null, null);
    if (b.messages === undefined)
        return missing(ctx, 'messages');
    const messages = (0, common_1.arr)(b.messages);
    if (messages.length === 0)
        return error(ctx, 400, "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", 'messages', 'empty_array');
    let userText = '';
    let inputChars = 0;
    for (let i = 0; i < messages.length; i++) {
        const m = (0, common_1.obj)(messages[i]);
        const role = (0, common_1.str)(m.role);
        if (!role || !ROLES.includes(role))
            return invalid(ctx, `messages[${i}].role`, `Invalid value: '${String(m.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`);
        const text = contentText(m.content);
        inputChars += text.length;
        for (const tc of (0, common_1.arr)(m.tool_calls))
            inputChars += ((0, common_1.str)((0, common_1.obj)((0, common_1.obj)(tc).function).arguments) ?? '').length;
        if (role === 'user')
            userText = text;
    }
    const stream = b.stream === true;
    if (b.stream_options !== undefined && b.stream_options !== null && !stream)
        return error(ctx, 400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options', 'invalid_value');
    const topK = (0, common_1.num)(b.top_logprobs) ?? 0;
    if (topK < 0 || topK > 20)
        return error(ctx, 400, `Invalid 'top_logprobs': expected a value between 0 and 20, but got ${topK} instead.`, 'top_logprobs', 'invalid_value');
    const c = (0, synth_1.compose)(ctx.knobs, { userText, inputChars, maxTokens: (0, common_1.num)(b.max_completion_tokens) ?? (0, common_1.num)(b.max_tokens), stop: (0, common_1.strList)(b.stop), wantLogprobs: b.logprobs === true });
    const id = (0, common_1.newId)('chatcmpl-');
    const created = (0, common_1.unixNow)();
    const callId = (0, common_1.newId)('call_');
    const lp = (list) => ({ content: list.map((p) => logprobItem(p, topK)), refusal: null });
    if (!stream) {
        const message = { role: 'assistant', content: c.toolCall ? null : c.text, refusal: null, annotations: [] };
        if (c.toolCall)
            message.tool_calls = [{ id: callId, type: 'function', function: { name: c.toolCall.name, arguments: c.toolCall.arguments } }];
        return (0, common_1.sendJson)(ctx, 200, {
            id,
            object: 'chat.completion',
            created,
            model,
            choices: [{ index: 0, message, logprobs: c.logprobs ? lp(c.logprobs) : null, finish_reason: chatFinish(c) }],
            usage: chatUsage(c),
            service_tier: 'default',
            system_fingerprint: 'fp_fake',
        });
    }
    const withUsage = (0, common_1.obj)(b.stream_options).include_usage === true;
    const chunk = (delta, finish, logprobs = null) => {
        const body = { id, object: 'chat.completion.chunk', created, model, service_tier: 'default', system_fingerprint: 'fp_fake', choices: [{ index: 0, delta, logprobs, finish_reason: finish }] };
        if (withUsage)
            body.usage = null;
        return (0, common_1.sse)(null, body);
    };
    const tool = c.toolCall;
    await (0, common_1.runStream)(ctx, {
        head: [
            tool
                ? chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: tool.name, arguments: '' } }], refusal: null }, null)
                : chunk({ role: 'assistant', content: '', refusal: null }, null),
        ],
        count: c.pieces.length,
        delta: (i) => {
            const piece = c.pieces[i % c.pieces.length];
            if (tool)
                return chunk({ tool_calls: [{ index: 0, function: { arguments: piece.text } }] }, null);
            return chunk({ content: piece.text }, null, c.logprobs ? lp(piece.lp) : null);
        },
        tail: () => {
            const frames = [chunk({}, chatFinish(c))];
            if (withUsage)
                frames.push((0, common_1.sse)(null, { id, object: 'chat.completion.chunk', created, model, service_tier: 'default', system_fingerprint: 'fp_fake', choices: [], usage: chatUsage(c) }));
            frames.push('data: [DONE]\n\n');
            return frames;
        },
    });
}
// ---------- Responses API ----------
async function responses(ctx) {
    const b = (0, common_1.obj)(ctx.body);
    const model = (0, common_1.str)(b.model);
    if (!model)
        return missing(ctx, 'model');
    if (b.input === undefined && b.previous_response_id === undefined && b.prompt === undefined)
        return missing(ctx, 'input');
    let userText = '';
    let inputChars = ((0, common_1.str)(b.instructions) ?? '').length;
    if (typeof b.input === 'string') {
        userText = b.input;
        inputChars += b.input.length;
    }
    else if (b.input !== undefined) {
        if (!Array.isArray(b.input))
            return error(ctx, 400, "Invalid type for 'input': expected one of a string or an array of input items.", 'input', 'invalid_type');
        for (const item of b.input) {
            const it = (0, common_1.obj)(item);
            const text = it.content !== undefined ? contentText(it.content) : ((0, common_1.str)(it.output) ?? (0, common_1.str)(it.arguments) ?? '');
            inputChars += text.length;
            if (it.role === 'user' || it.type === 'function_call_output')
                userText = text;
        }
    }
    const topK = (0, common_1.num)(b.top_logprobs) ?? 0;
    const wantLogprobs = (0, common_1.arr)(b.include).includes('message.output_text.logprobs');
    const c = (0, synth_1.compose)(ctx.knobs, { userText, inputChars, maxTokens: (0, common_1.num)(b.max_output_tokens), wantLogprobs });
    const id = (0, common_1.newId)('resp_');
    const itemId = (0, common_1.newId)(c.toolCall ? 'fc_' : 'msg_');
    const callId = (0, common_1.newId)('call_');
    const createdAt = (0, common_1.unixNow)();
    const status = c.finish === 'length' ? 'incomplete' : 'completed';
    const u = c.usage;
    const usage = {
        input_tokens: u.prompt,
        input_tokens_details: { cached_tokens: u.cached },
        output_tokens: u.completion,
        output_tokens_details: { reasoning_tokens: u.reasoning },
        total_tokens: u.prompt + u.completion,
    };
    const lps = (list) => list.map((p) => logprobItem(p, topK));
    const part = (text) => ({ type: 'output_text', annotations: [], logprobs: c.logprobs ? lps(c.logprobs) : [], text });
    const item = (done) => c.toolCall
        ? { id: itemId, type: 'function_call', status: done ? 'completed' : 'in_progress', arguments: done ? c.toolCall.arguments : '', call_id: callId, name: c.toolCall.name }
        : { id: itemId, type: 'message', status: done ? status : 'in_progress', content: done ? [part(c.text)] : [], role: 'assistant' };
    const response = (done) => ({
        id,
        object: 'response',
        created_at: createdAt,
        status: done ? status : 'in_progress',
        background: false,
        error: null,
        incomplete_details: done && status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
        instructions: b.instructions ?? null,
        max_output_tokens: b.max_output_tokens ?? null,
        max_tool_calls: null,
        model,
        output: done ? [item(true)] : [],
        parallel_tool_calls: b.parallel_tool_calls ?? true,
        previous_response_id: b.previous_response_id ?? null,
        reasoning: { effort: (0, common_1.obj)(b.reasoning).effort ?? null, summary: null },
        service_tier: 'default',
        store: b.store ?? true,
        temperature: b.temperature ?? 1,
        text: b.text ?? { format: { type: 'text' }, verbosity: 'medium' },
        tool_choice: b.tool_choice ?? 'auto',
        tools: b.tools ?? [],
        top_logprobs: topK,
        top_p: b.top_p ?? 1,
        truncation: b.truncation ?? 'disabled',
        usage: done ? usage : null,
        user: null,
        metadata: b.metadata ?? {},
    });
    if (b.stream !== true)
        return (0, common_1.sendJson)(ctx, 200, response(true));
    let seq = 0;
    const ev = (type, data) => (0, common_1.sse)(type, { type, sequence_number: seq++, ...data });
    const at = { item_id: itemId, output_index: 0 };
    const text = { ...at, content_index: 0 };
    const tool = c.toolCall;
    await (0, common_1.runStream)(ctx, {
        head: [
            ev('response.created', { response: response(false) }),
            ev('response.in_progress', { response: response(false) }),
            ev('response.output_item.added', { output_index: 0, item: item(false) }),
            ...(tool ? [] : [ev('response.content_part.added', { ...text, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } })]),
        ],
        count: c.pieces.length,
        delta: (i) => {
            const piece = c.pieces[i % c.pieces.length];
            if (tool)
                return ev('response.function_call_arguments.delta', { ...at, delta: piece.text });
            return ev('response.output_text.delta', { ...text, delta: piece.text, logprobs: lps(piece.lp) });
        },
        tail: () => [
            ...(tool
                ? [ev('response.function_call_arguments.done', { ...at, name: tool.name, arguments: tool.arguments })]
                : [ev('response.output_text.done', { ...text, text: c.text, logprobs: c.logprobs ? lps(c.logprobs) : [] }), ev('response.content_part.done', { ...text, part: part(c.text) })]),
            ev('response.output_item.done', { output_index: 0, item: item(true) }),
            ev(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: response(true) }),
        ],
    });
}
// ---------- embeddings ----------
function embeddings(ctx) {
    const b = (0, common_1.obj)(ctx.body);
    const model = (0, common_1.str)(b.model);
    if (!model)
        return error(ctx, 400, 'you must provide a model parameter', null, null);
    if (b.input === undefined || b.input === null)
        return missing(ctx, 'input');
    const raw = b.input;
    // string | string[] | number[] (token ids) | number[][]
    const inputs = [];
    if (typeof raw === 'string')
        inputs.push({ text: raw, tokens: (0, synth_1.tokenCount)(raw.length) });
    else if (Array.isArray(raw) && raw.length > 0 && raw.every((x) => typeof x === 'number'))
        inputs.push({ text: raw.join(' '), tokens: raw.length });
    else if (Array.isArray(raw)) {
        for (const x of raw) {
            if (typeof x === 'string')
                inputs.push({ text: x, tokens: (0, synth_1.tokenCount)(x.length) });
            else if (Array.isArray(x) && x.length > 0 && x.every((t) => typeof t === 'number'))
                inputs.push({ text: x.join(' '), tokens: x.length });
            else
                return error(ctx, 400, "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", null, null);
        }
    }
    if (inputs.length === 0 || inputs.some((x) => x.text === ''))
        return error(ctx, 400, "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", null, null);
    const format = b.encoding_format ?? 'float';
    if (format !== 'float' && format !== 'base64')
        return invalid(ctx, 'encoding_format', `Invalid value: '${String(format)}'. Supported values are: 'float' and 'base64'.`);
    const dims = (0, common_1.num)(b.dimensions) ?? ctx.knobs.embeddingDims ?? 8;
    if (dims < 1 || !Number.isInteger(dims))
        return error(ctx, 400, `Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got ${dims} instead.`, 'dimensions', 'integer_below_min_value');
    const tokens = ctx.knobs.promptTokens ?? inputs.reduce((s, x) => s + x.tokens, 0);
    (0, common_1.sendJson)(ctx, 200, {
        object: 'list',
        data: inputs.map((x, index) => {
            const v = (0, synth_1.embed)(x.text, dims);
            return { object: 'embedding', index, embedding: format === 'base64' ? (0, synth_1.float32Base64)(v) : v };
        }),
        model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
}
// ---------- images ----------
function images(ctx) {
    const b = (0, common_1.obj)(ctx.body);
    const prompt = (0, common_1.str)(b.prompt);
    if (!prompt)
        return missing(ctx, 'prompt');
    const model = (0, common_1.str)(b.model) ?? 'dall-e-2';
    const n = (0, common_1.num)(b.n) ?? 1;
    if (n < 1 || n > 10 || !Number.isInteger(n))
        return error(ctx, 400, `Invalid 'n': expected an integer between 1 and 10, but got ${n} instead.`, 'n', 'invalid_value');
    const isGptImage = model.startsWith('gpt-image');
    const format = b.response_format ?? (isGptImage ? 'b64_json' : 'url');
    if (format !== 'url' && format !== 'b64_json')
        return invalid(ctx, 'response_format', `Invalid value: '${String(format)}'. Supported values are: 'url' and 'b64_json'.`);
    const revised = ctx.knobs.text ?? prompt;
    const id = (0, common_1.newId)('img-');
    const data = Array.from({ length: n }, (_, i) => (format === 'url' ? { url: `${ctx.baseUrl}/files/${id}-${i}.png`, revised_prompt: revised } : { b64_json: synth_1.PNG_BASE64, revised_prompt: revised }));
    const body = { created: (0, common_1.unixNow)(), data };
    if (isGptImage) {
        const input = ctx.knobs.promptTokens ?? (0, synth_1.tokenCount)(prompt.length);
        const output = ctx.knobs.completionTokens ?? 272 * n;
        body.usage = { input_tokens: input, output_tokens: output, total_tokens: input + output, input_tokens_details: { text_tokens: input, image_tokens: 0 } };
    }
    (0, common_1.sendJson)(ctx, 200, body);
}
// ---------- router ----------
const POST_ROUTES = new Map([
    ['/chat/completions', chat],
    ['/responses', responses],
    ['/embeddings', embeddings],
    ['/images/generations', images],
]);
const modelObj = (id) => ({ id, object: 'model', created: 1700000000, owned_by: 'openai' });
exports.openai = {
    prefixes: ['/openai/v1'],
    auth(ctx) {
        if (/^Bearer\s+\S/i.test(ctx.req.headers.authorization ?? ''))
            return true;
        error(ctx, 401, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", null, null);
        return false;
    },
    error: (ctx, status, message) => error(ctx, status, message),
    async handle(ctx) {
        const { method, path } = ctx;
        const post = method === 'POST' ? POST_ROUTES.get(path) : undefined;
        if (post) {
            if (!(0, common_1.isObj)(ctx.body))
                return error(ctx, 400, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)", null, null);
            return post(ctx);
        }
        if (method === 'GET' && path === '/models')
            return (0, common_1.sendJson)(ctx, 200, { object: 'list', data: MODELS.map(modelObj) });
        if (method === 'GET' && path.startsWith('/models/'))
            return (0, common_1.sendJson)(ctx, 200, modelObj(decodeURIComponent(path.slice(8))));
        error(ctx, 404, `Invalid URL (${method} /v1${path})`, null, null);
    },
};
