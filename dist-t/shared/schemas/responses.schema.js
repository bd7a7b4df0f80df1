"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.inputItemsQuerySchema = exports.retrieveResponseQuerySchema = exports.responsesSchema = exports.metadataSchema = exports.reasoningSchema = exports.JSON_SCHEMA_FORMAT_FIELDS = exports.toolChoiceOf = exports.typeIs = exports.FUNCTION_NAME = exports.OUTPUT_TOKENS_CEILING = exports.PLUGIN_NAMES = exports.REASONING_EFFORT_VALUES = void 0;
exports.nullable = nullable;
const routing_schema_1 = require("./routing.schema");
/** `{...schema}` that also accepts null. */
function nullable(schema) {
    const types = typeof schema.type === 'string' ? [schema.type] : [...schema.type];
    const out = { ...schema, type: [...types, 'null'] };
    if (Array.isArray(out.enum))
        out.enum = [...out.enum, null];
    return out;
}
exports.REASONING_EFFORT_VALUES = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];
exports.PLUGIN_NAMES = ['masker'];
/**
 * The most output tokens a request may ask for, and the output limit of an endpoint whose catalog entry gives no
 * `maxOutputTokens` (docs/responses.md). No model offers more; a larger number is a mistake or an attack (1e300).
 */
exports.OUTPUT_TOKENS_CEILING = 1_000_000;
exports.FUNCTION_NAME = '^[a-zA-Z0-9_-]{1,64}$';
/** `if` the object's `type` is `value` (and present). */
const typeIs = (value) => ({ required: ['type'], properties: { type: { const: value } } });
exports.typeIs = typeIs;
// ---------- input ----------
const contentPart = {
    type: 'object',
    required: ['type'],
    properties: { type: { enum: ['input_text', 'input_image', 'input_file', 'output_text', 'refusal'] } },
    allOf: [
        { if: (0, exports.typeIs)('input_text'), then: { required: ['text'], properties: { text: { type: 'string' } } } },
        {
            if: (0, exports.typeIs)('input_image'),
            then: {
                required: ['image_url'],
                properties: { image_url: { type: 'string', minLength: 1 }, detail: { enum: ['low', 'high', 'auto'] } },
            },
        },
        {
            if: (0, exports.typeIs)('input_file'),
            then: {
                anyOf: [{ required: ['file_data'] }, { required: ['file_url'] }],
                properties: { file_data: { type: 'string' }, file_url: { type: 'string' }, filename: { type: 'string' } },
            },
        },
        { if: (0, exports.typeIs)('output_text'), then: { required: ['text'], properties: { text: { type: 'string' } } } },
        { if: (0, exports.typeIs)('refusal'), then: { required: ['refusal'], properties: { refusal: { type: 'string' } } } },
    ],
};
const messageItem = {
    required: ['role', 'content'],
    properties: {
        role: { enum: ['user', 'assistant', 'system', 'developer'] },
        content: { type: ['string', 'array'], items: contentPart },
    },
};
const functionCallItem = {
    required: ['call_id', 'name', 'arguments'],
    properties: {
        call_id: { type: 'string', minLength: 1 },
        name: { type: 'string', minLength: 1 },
        arguments: { type: 'string' },
    },
};
const functionCallOutputItem = {
    required: ['call_id', 'output'],
    properties: {
        call_id: { type: 'string', minLength: 1 },
        output: { type: ['string', 'array'], items: contentPart },
    },
};
const reasoningItem = {
    required: ['summary'],
    properties: {
        summary: {
            type: 'array',
            items: { type: 'object', required: ['text'], properties: { type: { const: 'summary_text' }, text: { type: 'string' } } },
        },
    },
};
const itemReference = { required: ['id'], properties: { id: { type: 'string', minLength: 1 } } };
const inputItem = {
    type: 'object',
    properties: {
        type: { enum: ['message', 'function_call', 'function_call_output', 'reasoning', 'item_reference'] },
    },
    allOf: [
        { if: { anyOf: [{ not: { required: ['type'] } }, (0, exports.typeIs)('message')] }, then: messageItem },
        { if: (0, exports.typeIs)('function_call'), then: functionCallItem },
        { if: (0, exports.typeIs)('function_call_output'), then: functionCallOutputItem },
        { if: (0, exports.typeIs)('reasoning'), then: reasoningItem },
        { if: (0, exports.typeIs)('item_reference'), then: itemReference },
    ],
};
// ---------- tools ----------
const tool = {
    type: 'object',
    required: ['type'],
    properties: { type: { type: 'string', minLength: 1 } },
    if: (0, exports.typeIs)('function'),
    then: {
        required: ['name'],
        properties: {
            name: { type: 'string', pattern: exports.FUNCTION_NAME },
            description: { type: ['string', 'null'] },
            parameters: { type: ['object', 'null'] },
            strict: { type: ['boolean', 'null'] },
        },
    },
};
/**
 * A `tool_choice`: a mode string, or an object whose `type` is checked by `type` and whose variants by `cases`
 * (chat completions and responses spell the object differently).
 */
const toolChoiceOf = (type, cases) => ({
    type: ['string', 'object'],
    if: { type: 'string' },
    then: { enum: ['auto', 'none', 'required'] },
    else: { required: ['type'], properties: { type }, allOf: cases },
});
exports.toolChoiceOf = toolChoiceOf;
const toolChoice = (0, exports.toolChoiceOf)({ type: 'string', minLength: 1 }, [
    { if: (0, exports.typeIs)('function'), then: { required: ['name'], properties: { name: { type: 'string', minLength: 1 } } } },
    {
        if: (0, exports.typeIs)('allowed_tools'),
        then: {
            required: ['mode', 'tools'],
            properties: {
                mode: { enum: ['auto', 'required'] },
                tools: { type: 'array', items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } },
            },
        },
    },
]);
// ---------- text, reasoning ----------
/** A `json_schema` output format's fields, the same in chat completions' `response_format.json_schema`. */
exports.JSON_SCHEMA_FORMAT_FIELDS = {
    name: { type: 'string', pattern: exports.FUNCTION_NAME },
    schema: { type: 'object' },
    strict: { type: ['boolean', 'null'] },
    description: { type: 'string' },
};
const textFormat = {
    type: 'object',
    required: ['type'],
    properties: { type: { enum: ['text', 'json_object', 'json_schema'] } },
    if: (0, exports.typeIs)('json_schema'),
    then: { required: ['name', 'schema'], properties: exports.JSON_SCHEMA_FORMAT_FIELDS },
};
const text = {
    type: 'object',
    additionalProperties: false,
    properties: {
        format: textFormat,
        verbosity: nullable({ type: 'string', enum: ['low', 'medium', 'high'] }),
    },
};
exports.reasoningSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        type: { type: 'string', minLength: 1 },
        effort: nullable({ type: 'string', enum: [...exports.REASONING_EFFORT_VALUES] }),
        effort_level: nullable({ type: 'string', enum: [...exports.REASONING_EFFORT_VALUES] }),
        summary: nullable({ type: 'string', enum: ['auto', 'concise', 'detailed'] }),
        /** OpenAI's deprecated spelling of `summary`. */
        generate_summary: nullable({ type: 'string', enum: ['auto', 'concise', 'detailed'] }),
        max_tokens: { type: 'integer', minimum: 0 },
        enabled: { type: 'boolean' },
    },
};
exports.metadataSchema = {
    type: ['object', 'null'],
    maxProperties: 16,
    propertyNames: { maxLength: 64 },
    additionalProperties: { type: 'string', maxLength: 512 },
};
// ---------- the body ----------
exports.responsesSchema = {
    $id: 'ResponsesRequest',
    type: 'object',
    additionalProperties: false,
    // A model is needed: `model`, or the first of a non-empty `models`.
    anyOf: [{ required: ['model'] }, { required: ['models'], properties: { models: { minItems: 1 } } }],
    properties: {
        input: { type: ['string', 'array'], items: inputItem },
        model: { type: 'string', minLength: 1, maxLength: 512 },
        models: { type: 'array', maxItems: 10, items: { type: 'string', minLength: 1, maxLength: 512 } },
        instructions: nullable({ type: 'string' }),
        metadata: exports.metadataSchema,
        tools: { type: 'array', maxItems: 128, items: tool },
        tool_choice: toolChoice,
        parallel_tool_calls: nullable({ type: 'boolean' }),
        background: nullable({ type: 'boolean' }),
        include: nullable({ type: 'array', items: { type: 'string' } }),
        text,
        reasoning: nullable(exports.reasoningSchema),
        max_output_tokens: nullable({ type: 'integer', minimum: 1, maximum: exports.OUTPUT_TOKENS_CEILING }),
        temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
        top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
        presence_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
        frequency_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
        top_k: nullable({ type: 'integer', minimum: 0 }),
        top_logprobs: nullable({ type: 'integer', minimum: 0, maximum: 20 }),
        max_tool_calls: nullable({ type: 'integer', minimum: 1 }),
        stop_server_tools_when: {
            type: 'array',
            items: {
                type: 'object',
                required: ['type'],
                additionalProperties: false,
                properties: { type: { type: 'string', minLength: 1 }, value: { type: 'number' }, value_rub: { type: 'number' } },
            },
        },
        prompt: nullable({ type: 'object' }),
        image_config: { type: 'object' },
        // OpenAI accepts a conversation id string as well as `{id}`.
        conversation: { type: ['object', 'string', 'null'] },
        moderation: nullable({ type: 'object' }),
        modalities: { type: 'array', items: { type: 'string' } },
        context_management: nullable({ type: 'array', items: { type: 'object' } }),
        prompt_cache_key: nullable({ type: 'string', maxLength: 1024 }),
        previous_response_id: nullable({ type: 'string', minLength: 1 }),
        session_id: { type: 'string', minLength: 1, maxLength: 256 },
        stream: nullable({ type: 'boolean' }),
        stream_options: nullable({
            type: 'object',
            additionalProperties: false,
            properties: { include_obfuscation: { type: 'boolean' }, hide_intermediate_text: { type: 'boolean' } },
        }),
        provider: routing_schema_1.routingSchema,
        user: { type: 'string', maxLength: 512 },
        safety_identifier: nullable({ type: 'string', maxLength: 512 }),
        store: nullable({ type: 'boolean' }),
        plugins: { type: 'array', uniqueItems: true, items: { enum: [...exports.PLUGIN_NAMES] } },
        // Standard OpenAI fields outside the interface table, accepted so SDK code runs unchanged; echoed or ignored.
        truncation: nullable({ type: 'string', enum: ['auto', 'disabled'] }),
        service_tier: nullable({ type: 'string' }),
        prompt_cache_retention: nullable({ type: 'string' }),
    },
};
// ---------- queries of the stored-response routes ----------
/** `include` as the SDKs send it (`include=a`, `include[]=a`, repeated); accepted and not used. */
const includeQuery = { type: ['string', 'array'], items: { type: 'string' } };
/** GET /v1/responses/{id}: `stream=true` streams a background response again, after `starting_after`. */
exports.retrieveResponseQuerySchema = {
    $id: 'RetrieveResponseQuery',
    type: 'object',
    additionalProperties: false,
    properties: {
        stream: { type: 'boolean', default: false, description: 'Replay a background response as Server-Sent Events (live while it runs)' },
        starting_after: { type: 'integer', minimum: -1, maximum: 1_000_000_000, default: -1, description: 'Only events with a larger sequence_number' },
        include: includeQuery,
        'include[]': includeQuery,
        include_obfuscation: { type: 'boolean' },
    },
};
/** GET /v1/responses/{id}/input_items (OpenAI's list: newest first by default, `after` an item id). */
exports.inputItemsQuerySchema = {
    $id: 'ResponseInputItemsQuery',
    type: 'object',
    additionalProperties: false,
    properties: {
        order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
        after: { type: 'string', minLength: 1, maxLength: 200, description: 'Item id: list the items after it, in the chosen order' },
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
        include: includeQuery,
        'include[]': includeQuery,
    },
};
