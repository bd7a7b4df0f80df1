"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.gemini = void 0;
/** Google Gemini API wire format, mounted at `/gemini/v1beta` (and `/gemini/v1`). */
const common_1 = require("./common");
const synth_1 = require("./synth");
const STATUS = {
    400: 'INVALID_ARGUMENT',
    401: 'UNAUTHENTICATED',
    403: 'PERMISSION_DENIED',
    404: 'NOT_FOUND',
    409: 'ABORTED',
    429: 'RESOURCE_EXHAUSTED',
    499: 'CANCELLED',
    500: 'INTERNAL',
    503: 'UNAVAILABLE',
    504: 'DEADLINE_EXCEEDED',
};
const MESSAGES = {
    RESOURCE_EXHAUSTED: 'Resource has been exhausted (e.g. check quota).',
    INTERNAL: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
    UNAVAILABLE: 'The model is overloaded. Please try again later.',
    DEADLINE_EXCEEDED: 'Deadline expired before operation could complete.',
};
function error(ctx, status, message) {
    const code = STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
    (0, common_1.sendRaw)(ctx, status, { error: { code: status, message: message ?? MESSAGES[code] ?? 'Request contains an invalid argument.', status: code } });
}
const partsText = (parts) => {
    let out = '';
    for (const p of (0, common_1.arr)(parts)) {
        const part = (0, common_1.obj)(p);
        if (typeof part.text === 'string')
            out += part.text;
        else if (part.functionCall)
            out += JSON.stringify(part.functionCall);
        else if (part.functionResponse)
            out += JSON.stringify(part.functionResponse);
    }
    return out;
};
const FINISH = { stop: 'STOP', stop_sequence: 'STOP', length: 'MAX_TOKENS', tool: 'STOP' };
function parseArgs(args) {
    try {
        return JSON.parse(args);
    }
    catch {
        return {};
    }
}
async function generate(ctx, model, stream) {
    const b = (0, common_1.obj)(ctx.body);
    if (b.contents === undefined)
        return error(ctx, 400, '* GenerateContentRequest.contents: contents is not specified\n');
    if (!Array.isArray(b.contents) || b.contents.length === 0)
        return error(ctx, 400, '* GenerateContentRequest.contents: contents is not specified\n');
    let inputChars = partsText((0, common_1.obj)(b.systemInstruction).parts).length;
    let userText = '';
    for (let i = 0; i < b.contents.length; i++) {
        const c = (0, common_1.obj)(b.contents[i]);
        if (c.role !== undefined && c.role !== 'user' && c.role !== 'model' && c.role !== 'function')
            return error(ctx, 400, 'Please use a valid role: user, model.');
        if ((0, common_1.arr)(c.parts).length === 0)
            return error(ctx, 400, `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
        const text = partsText(c.parts);
        inputChars += text.length;
        if (c.role !== 'model')
            userText = text;
    }
    const cfg = (0, common_1.obj)(b.generationConfig);
    const topK = (0, common_1.num)(cfg.logprobs);
    if (topK !== undefined && (topK < 0 || topK > 20))
        return error(ctx, 400, `logprobs must be in the range [0, 20], got ${topK}.`);
    const c = (0, synth_1.compose)(ctx.knobs, { userText, inputChars, maxTokens: (0, common_1.num)(cfg.maxOutputTokens), stop: (0, common_1.strList)(cfg.stopSequences), wantLogprobs: cfg.responseLogprobs === true });
    const responseId = (0, common_1.newId)('');
    const u = c.usage;
    const promptDetails = [{ modality: 'TEXT', tokenCount: u.prompt }];
    const fullUsage = { promptTokenCount: u.prompt, candidatesTokenCount: Math.max(0, u.completion - u.reasoning), totalTokenCount: u.prompt + u.completion, promptTokensDetails: promptDetails };
    if (u.cached > 0)
        fullUsage.cachedContentTokenCount = u.cached;
    if (u.reasoning > 0)
        fullUsage.thoughtsTokenCount = u.reasoning;
    const candidate = (parts, lp, finish) => {
        const cand = { content: { parts, role: 'model' } };
        if (finish)
            cand.finishReason = FINISH[c.finish];
        if (lp && lp.length > 0) {
            const sum = lp.reduce((s, p) => s + p.logprob, 0);
            cand.avgLogprobs = sum / lp.length;
            const result = { chosenCandidates: lp.map((p) => ({ token: p.token, logProbability: p.logprob })), logProbabilitySum: sum };
            if (topK)
                result.topCandidates = lp.map((p) => ({ candidates: p.top.slice(0, topK).map(([token, logProbability]) => ({ token, logProbability })) }));
            cand.logprobsResult = result;
        }
        cand.index = 0;
        return cand;
    };
    const tool = c.toolCall;
    const toolParts = () => (tool ? [{ functionCall: { name: tool.name, args: parseArgs(tool.arguments) } }] : []);
    if (!stream) {
        return (0, common_1.sendJson)(ctx, 200, { candidates: [candidate(tool ? toolParts() : [{ text: c.text }], c.logprobs, true)], usageMetadata: fullUsage, modelVersion: model, responseId });
    }
    // Gemini frames SSE with CRLF; without `alt=sse` it streams one JSON array.
    const asSse = ctx.query.get('alt') === 'sse';
    const partialUsage = { promptTokenCount: u.prompt, totalTokenCount: u.prompt, promptTokensDetails: promptDetails };
    await (0, common_1.runStream)(ctx, {
        contentType: asSse ? 'text/event-stream' : 'application/json; charset=UTF-8',
        head: [],
        count: tool ? 1 : c.pieces.length,
        delta: (i, last) => {
            const piece = c.pieces[i % c.pieces.length];
            const chunk = { candidates: [candidate(tool ? toolParts() : [{ text: piece.text }], c.logprobs ? piece.lp : null, last)], usageMetadata: last ? fullUsage : partialUsage, modelVersion: model, responseId };
            return asSse ? (0, common_1.sse)(null, chunk, '\r\n') : `${i === 0 ? '[' : ',\r\n'}${JSON.stringify(chunk)}`;
        },
        tail: () => (asSse ? [] : [']']),
    });
}
function contentOf(ctx, req, where) {
    const parts = (0, common_1.arr)((0, common_1.obj)(req.content).parts);
    if (parts.length === 0) {
        error(ctx, 400, `* ${where}.content: content is not specified\n`);
        return null;
    }
    return partsText(parts);
}
const dimsOf = (ctx, req) => (0, common_1.num)(req.outputDimensionality) ?? ctx.knobs.embeddingDims ?? 8;
function embedContent(ctx) {
    const b = (0, common_1.obj)(ctx.body);
    const text = contentOf(ctx, b, 'EmbedContentRequest');
    if (text !== null)
        (0, common_1.sendJson)(ctx, 200, { embedding: { values: (0, synth_1.embed)(text, dimsOf(ctx, b)) } });
}
function batchEmbed(ctx, model) {
    const b = (0, common_1.obj)(ctx.body);
    const requests = (0, common_1.arr)(b.requests);
    if (requests.length === 0)
        return error(ctx, 400, '* BatchEmbedContentsRequest.requests: requests is not specified\n');
    const embeddings = [];
    for (let i = 0; i < requests.length; i++) {
        const r = (0, common_1.obj)(requests[i]);
        if (r.model !== undefined && r.model !== `models/${model}`)
            return error(ctx, 400, `* BatchEmbedContentsRequest.requests[${i}].model: model must match the request model "models/${model}".\n`);
        const text = contentOf(ctx, r, `BatchEmbedContentsRequest.requests[${i}]`);
        if (text === null)
            return;
        embeddings.push({ values: (0, synth_1.embed)(text, dimsOf(ctx, r)) });
    }
    (0, common_1.sendJson)(ctx, 200, { embeddings });
}
function countTokens(ctx) {
    const b = (0, common_1.obj)(ctx.body);
    const contents = (0, common_1.arr)(b.contents ?? (0, common_1.obj)(b.generateContentRequest).contents);
    const chars = contents.reduce((s, c) => s + partsText((0, common_1.obj)(c).parts).length, 0);
    const total = ctx.knobs.promptTokens ?? (0, synth_1.tokenCount)(chars);
    (0, common_1.sendJson)(ctx, 200, { totalTokens: total, promptTokensDetails: [{ modality: 'TEXT', tokenCount: total }] });
}
const MODELS = ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-2.0-flash', 'gemini-embedding-001', 'text-embedding-004'];
const modelInfo = (name) => ({
    name: `models/${name}`,
    version: '001',
    displayName: name,
    inputTokenLimit: 1048576,
    outputTokenLimit: name.includes('embedding') ? 1 : 65536,
    supportedGenerationMethods: name.includes('embedding') ? ['embedContent', 'batchEmbedContents'] : ['generateContent', 'countTokens'],
});
const METHOD = /^\/models\/([^/:]+):([A-Za-z]+)$/;
exports.gemini = {
    prefixes: ['/gemini/v1beta', '/gemini/v1'],
    auth(ctx) {
        const h = ctx.req.headers;
        if (h['x-goog-api-key'] || ctx.query.get('key') || /^Bearer\s+\S/i.test(h.authorization ?? ''))
            return true;
        error(ctx, 403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.");
        return false;
    },
    error,
    async handle(ctx) {
        const { method, path } = ctx;
        const m = method === 'POST' ? METHOD.exec(path) : null;
        if (m) {
            if (!(0, common_1.isObj)(ctx.body))
                return error(ctx, 400, 'Invalid JSON payload received. Unexpected token.');
            const model = decodeURIComponent(m[1]);
            switch (m[2]) {
                case 'generateContent':
                    return generate(ctx, model, false);
                case 'streamGenerateContent':
                    return generate(ctx, model, true);
                case 'embedContent':
                    return embedContent(ctx);
                case 'batchEmbedContents':
                    return batchEmbed(ctx, model);
                case 'countTokens':
                    return countTokens(ctx);
            }
        }
        if (method === 'GET' && path === '/models')
            return (0, common_1.sendJson)(ctx, 200, { models: MODELS.map(modelInfo) });
        if (method === 'GET' && path.startsWith('/models/'))
            return (0, common_1.sendJson)(ctx, 200, modelInfo(decodeURIComponent(path.slice(8))));
        error(ctx, 404, `Method not found: ${method} ${path}`);
    },
};
