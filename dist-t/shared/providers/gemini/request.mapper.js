"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.geminiHeaders = geminiHeaders;
exports.geminiModelResource = geminiModelResource;
exports.buildGenerateContentRequest = buildGenerateContentRequest;
exports.toContents = toContents;
exports.toGeminiSchema = toGeminiSchema;
exports.buildBatchEmbedRequest = buildBatchEmbedRequest;
const mapper_utils_1 = require("../mapper-utils");
/** Our effort names → `thinkingConfig.thinkingBudget` (tokens). https://ai.google.dev/gemini-api/docs/thinking */
const THINKING_BUDGET = new Map([
    ['minimal', 512],
    ['low', 1024],
    ['medium', 8192],
    ['high', 24576],
    ['max', 32768],
]);
/** https://ai.google.dev/gemini-api/docs/function-calling#function_calling_modes */
const FUNCTION_CALLING_MODE = new Map([
    ['auto', 'AUTO'],
    ['none', 'NONE'],
    ['required', 'ANY'],
]);
/**
 * Gemini 3 refuses replayed function calls without a thought signature; we keep none, so we send the value
 * Google documents for conversations that did not come from Gemini.
 * https://ai.google.dev/gemini-api/docs/thought-signatures
 */
const FOREIGN_THOUGHT_SIGNATURE = 'skip_thought_signature_validator';
function geminiHeaders(apiKey, stream = false) {
    return { 'x-goog-api-key': apiKey, 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json' };
}
/** `gemini-2.5-flash` → `models/gemini-2.5-flash`; `models/x` and `tunedModels/x` stay as they are. */
function geminiModelResource(model) {
    return model.includes('/') ? model : `models/${model}`;
}
function buildGenerateContentRequest(req, apiKey) {
    const { systemInstruction, contents } = toContents(req);
    const body = { contents };
    if (systemInstruction)
        body.systemInstruction = { parts: [{ text: systemInstruction }] };
    const tools = req.tools ?? [];
    if (tools.length > 0) {
        body.tools = [
            {
                functionDeclarations: tools.map((t) => ({
                    name: t.name,
                    ...(t.description !== undefined && { description: t.description }),
                    ...(t.parameters !== undefined && { parameters: toGeminiSchema(t.parameters) }),
                })),
            },
        ];
    }
    if (req.toolChoice !== undefined)
        body.toolConfig = { functionCallingConfig: toFunctionCallingConfig(req.toolChoice) };
    const config = generationConfig(req);
    if (Object.keys(config).length > 0)
        body.generationConfig = config;
    const resource = geminiModelResource(req.model);
    const path = req.stream ? `/${resource}:streamGenerateContent?alt=sse` : `/${resource}:generateContent`;
    return { method: 'POST', path, headers: geminiHeaders(apiKey, req.stream), body };
}
function toFunctionCallingConfig(choice) {
    if (typeof choice === 'string')
        return { mode: FUNCTION_CALLING_MODE.get(choice) ?? 'AUTO' };
    return { mode: 'ANY', allowedFunctionNames: [choice.name] };
}
/** https://ai.google.dev/api/generate-content#generationconfig */
function generationConfig(req) {
    const config = {};
    const direct = [
        ['temperature', req.temperature],
        ['topP', req.topP],
        ['topK', req.topK],
        ['maxOutputTokens', req.maxOutputTokens],
        ['presencePenalty', req.presencePenalty],
        ['frequencyPenalty', req.frequencyPenalty],
        ['seed', req.seed],
    ];
    for (const [name, value] of direct)
        if (value !== undefined)
            config[name] = value;
    if (req.stop !== undefined && req.stop.length > 0)
        config.stopSequences = req.stop;
    const format = req.textFormat;
    if (format && format.type !== 'text') {
        config.responseMimeType = 'application/json';
        if (format.type === 'json_schema')
            config.responseSchema = toGeminiSchema(format.schema);
    }
    if (req.logprobs || (req.topLogprobs ?? 0) > 0) {
        config.responseLogprobs = true;
        if (req.topLogprobs !== undefined)
            config.logprobs = req.topLogprobs;
    }
    const thinking = thinkingConfig(req);
    if (thinking)
        config.thinkingConfig = thinking;
    return config;
}
function thinkingConfig(req) {
    const r = req.reasoning;
    if (!r)
        return undefined;
    if (r.enabled === false)
        return { thinkingBudget: 0 };
    const config = {};
    const budget = r.maxTokens ?? (r.effort !== undefined ? THINKING_BUDGET.get(r.effort) : undefined);
    if (budget !== undefined)
        config.thinkingBudget = budget;
    // Thought summaries only come back when asked for.
    if (r.summary !== undefined && r.summary !== 'none')
        config.includeThoughts = true;
    return Object.keys(config).length > 0 ? config : undefined;
}
/**
 * System and developer messages go to `systemInstruction`; function calls are `model` parts, their outputs
 * `user` parts named after the call (Gemini matches responses by name). Consecutive parts of one role share a
 * content, as parallel function responses must.
 */
function toContents(req) {
    const system = req.instructions ? [req.instructions] : [];
    const contents = [];
    const callNames = new Map();
    const push = (role, parts) => {
        if (parts.length === 0)
            return;
        const last = contents[contents.length - 1];
        if (last?.role === role)
            last.parts.push(...parts);
        else
            contents.push({ role, parts });
    };
    for (const item of req.input) {
        switch (item.type) {
            case 'message':
                if (item.role === 'system' || item.role === 'developer')
                    system.push(item.content.map(systemText).join('\n\n'));
                else
                    push(item.role === 'assistant' ? 'model' : 'user', item.content.map(toPart));
                break;
            case 'function_call':
                callNames.set(item.call_id, item.name);
                push('model', [
                    { functionCall: { name: item.name, args: (0, mapper_utils_1.parseJsonArguments)(item.arguments, `function_call ${item.call_id}`) }, thoughtSignature: FOREIGN_THOUGHT_SIGNATURE },
                ]);
                break;
            case 'function_call_output': {
                const name = callNames.get(item.call_id) ?? (0, mapper_utils_1.unsupported)(`Gemini: function_call_output ${item.call_id} has no matching function_call`);
                push('user', [{ functionResponse: { name, response: functionResponse(item.output) } }]);
                break;
            }
        }
    }
    return { systemInstruction: system.join('\n\n'), contents };
}
/** `response` must be an object; Google's docs put the function's result under `output`. */
function functionResponse(output) {
    try {
        return { output: JSON.parse(output) };
    }
    catch {
        return { output };
    }
}
function systemText(p) {
    return p.type === 'input_text' || p.type === 'output_text' ? p.text : (0, mapper_utils_1.unsupported)(`Gemini: ${p.type} is not allowed in a system message`);
}
function toPart(p) {
    switch (p.type) {
        case 'input_text':
        case 'output_text':
            return { text: p.text };
        case 'input_image':
            return mediaPart(p.image_url);
        case 'input_file':
            if (p.file_data !== undefined) {
                const data = (0, mapper_utils_1.parseDataUrl)(p.file_data) ?? { mimeType: 'application/pdf', base64: p.file_data };
                return { inlineData: { mimeType: data.mimeType, data: data.base64 } };
            }
            if (p.file_url !== undefined)
                return mediaPart(p.file_url);
            return (0, mapper_utils_1.unsupported)('Gemini: input_file needs file_data or file_url');
    }
}
function mediaPart(url) {
    const data = (0, mapper_utils_1.parseDataUrl)(url);
    if (data)
        return { inlineData: { mimeType: data.mimeType, data: data.base64 } };
    const mimeType = (0, mapper_utils_1.mimeTypeFromUrl)(url);
    return { fileData: { fileUri: url, ...(mimeType !== undefined && { mimeType }) } };
}
// ---------- JSON Schema → Gemini Schema (an OpenAPI 3.0 subset) ----------
/** The fields Gemini's `Schema` accepts (https://ai.google.dev/api/caching#Schema); anything else is refused upstream. */
const SCHEMA_FIELDS = new Set([
    'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required',
    'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering',
    'default', 'items', 'minimum', 'maximum',
]);
/**
 * Keeps the fields Gemini accepts, upper-cases `type`, turns `["string", "null"]` into `nullable`, `const`
 * into a one-value `enum`, and inlines local `$ref`s (`#/$defs/X`, `#/definitions/X`) up to a small depth.
 */
function toGeminiSchema(schema) {
    const root = schema;
    const convert = (node, depth) => {
        if (!(0, mapper_utils_1.isRecord)(node))
            return node;
        if (typeof node.$ref === 'string') {
            const target = depth < 8 ? resolveRef(root, node.$ref) : undefined;
            return target ? convert(target, depth + 1) : { type: 'OBJECT' };
        }
        const out = {};
        for (const [key, value] of Object.entries(node)) {
            if (key === 'type') {
                const types = (Array.isArray(value) ? value : [value]).filter((t) => typeof t === 'string');
                const real = types.filter((t) => t !== 'null');
                if (real[0] !== undefined)
                    out.type = real[0].toUpperCase();
                if (types.includes('null'))
                    out.nullable = true;
            }
            else if (key === 'const') {
                out.enum = [value];
            }
            else if (key === 'properties' && (0, mapper_utils_1.isRecord)(value)) {
                out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, convert(v, depth)]));
            }
            else if (key === 'items') {
                out.items = convert(value, depth);
            }
            else if (key === 'anyOf' && Array.isArray(value)) {
                out.anyOf = value.map((v) => convert(v, depth));
            }
            else if (SCHEMA_FIELDS.has(key)) {
                out[key] = value;
            }
        }
        return out;
    };
    return convert(schema, 0);
}
function resolveRef(root, ref) {
    if (!ref.startsWith('#/'))
        return undefined;
    let node = root;
    for (const segment of ref.slice(2).split('/')) {
        if (!(0, mapper_utils_1.isRecord)(node))
            return undefined;
        node = node[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    return node;
}
// ---------- embeddings ----------
/** https://ai.google.dev/api/embeddings#method:-models.batchembedcontents */
function buildBatchEmbedRequest(req, apiKey) {
    const resource = geminiModelResource(req.model);
    const requests = req.inputs.map((input) => ({
        model: resource,
        content: {
            parts: input.type === 'text'
                ? [{ text: input.text }]
                : input.type === 'tokens'
                    ? (0, mapper_utils_1.unsupported)('Gemini embeddings take no token arrays')
                    : input.content.map((c) => (c.type === 'text' ? { text: c.text } : mediaPart(c.url))),
        },
        ...(req.dimensions !== undefined && { outputDimensionality: req.dimensions }),
    }));
    return { method: 'POST', path: `/${resource}:batchEmbedContents`, headers: geminiHeaders(apiKey), body: { requests } };
}
