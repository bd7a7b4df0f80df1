"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.chatSchema = void 0;
/**
 * POST /v1/chat/completions body, OpenAI's shape (https://platform.openai.com/docs/api-reference/chat/create)
 * plus our extensions (`models`, `provider`, `top_k`, `reasoning`, `session_id`, `plugins`).
 *
 * Unknown top-level fields are refused, except standard OpenAI fields that SDK code commonly sends and that
 * change nothing we could honour or refuse meaningfully: `safety_identifier` (used as `user`), `service_tier`,
 * `logit_bias`, `verbosity`, `prompt_cache_retention`, `modalities` (text only). Fields we cannot serve
 * (`audio`, `functions`/`function_call`, `prediction`, `web_search_options`, `n` above 1) are 400.
 */
const responses_schema_1 = require("./responses.schema");
const routing_schema_1 = require("./routing.schema");
const roleIs = (value) => ({ required: ['role'], properties: { role: { const: value } } });
const textPart = {
    type: 'object',
    required: ['type', 'text'],
    properties: { type: { const: 'text' }, text: { type: 'string' } },
};
const userPart = {
    type: 'object',
    required: ['type'],
    properties: { type: { enum: ['text', 'image_url', 'file'] } },
    allOf: [
        { if: (0, responses_schema_1.typeIs)('text'), then: { required: ['text'], properties: { text: { type: 'string' } } } },
        {
            if: (0, responses_schema_1.typeIs)('image_url'),
            then: {
                required: ['image_url'],
                properties: {
                    image_url: {
                        type: 'object',
                        required: ['url'],
                        properties: { url: { type: 'string', minLength: 1 }, detail: { enum: ['low', 'high', 'auto'] } },
                    },
                },
            },
        },
        {
            if: (0, responses_schema_1.typeIs)('file'),
            then: {
                required: ['file'],
                properties: {
                    file: {
                        type: 'object',
                        required: ['file_data'],
                        properties: { file_data: { type: 'string', minLength: 1 }, filename: { type: 'string' } },
                    },
                },
            },
        },
    ],
};
const assistantPart = {
    type: 'object',
    required: ['type'],
    properties: { type: { enum: ['text', 'refusal'] } },
    allOf: [
        { if: (0, responses_schema_1.typeIs)('text'), then: { required: ['text'], properties: { text: { type: 'string' } } } },
        { if: (0, responses_schema_1.typeIs)('refusal'), then: { required: ['refusal'], properties: { refusal: { type: 'string' } } } },
    ],
};
const toolCall = {
    type: 'object',
    required: ['id', 'type', 'function'],
    properties: {
        id: { type: 'string', minLength: 1 },
        type: { const: 'function' },
        function: {
            type: 'object',
            required: ['name', 'arguments'],
            properties: { name: { type: 'string', minLength: 1 }, arguments: { type: 'string' } },
        },
    },
};
const textContent = { type: ['string', 'array'], items: textPart };
const message = {
    type: 'object',
    required: ['role'],
    properties: { role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] }, name: { type: 'string' } },
    allOf: [
        { if: roleIs('system'), then: { required: ['content'], properties: { content: textContent } } },
        { if: roleIs('developer'), then: { required: ['content'], properties: { content: textContent } } },
        { if: roleIs('user'), then: { required: ['content'], properties: { content: { type: ['string', 'array'], items: userPart } } } },
        {
            if: roleIs('assistant'),
            then: {
                properties: {
                    content: { type: ['string', 'array', 'null'], items: assistantPart },
                    tool_calls: { type: ['array', 'null'], items: toolCall },
                    refusal: { type: ['string', 'null'] },
                },
            },
        },
        {
            if: roleIs('tool'),
            then: {
                required: ['tool_call_id', 'content'],
                properties: { tool_call_id: { type: 'string', minLength: 1 }, content: textContent },
            },
        },
    ],
};
const tool = {
    type: 'object',
    required: ['type', 'function'],
    properties: {
        type: { const: 'function' },
        function: {
            type: 'object',
            required: ['name'],
            properties: {
                name: { type: 'string', pattern: responses_schema_1.FUNCTION_NAME },
                description: { type: 'string' },
                parameters: { type: 'object' },
                strict: { type: ['boolean', 'null'] },
            },
        },
    },
};
const namedFunction = {
    type: 'object',
    required: ['type', 'function'],
    properties: { type: { const: 'function' }, function: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } } },
};
const toolChoice = (0, responses_schema_1.toolChoiceOf)({ enum: ['function', 'allowed_tools'] }, [
    { if: (0, responses_schema_1.typeIs)('function'), then: namedFunction },
    {
        if: (0, responses_schema_1.typeIs)('allowed_tools'),
        then: {
            required: ['allowed_tools'],
            properties: {
                allowed_tools: {
                    type: 'object',
                    required: ['mode', 'tools'],
                    properties: { mode: { enum: ['auto', 'required'] }, tools: { type: 'array', items: namedFunction } },
                },
            },
        },
    },
]);
const responseFormat = {
    type: 'object',
    required: ['type'],
    properties: { type: { enum: ['text', 'json_object', 'json_schema'] } },
    if: (0, responses_schema_1.typeIs)('json_schema'),
    then: {
        required: ['json_schema'],
        properties: {
            json_schema: { type: 'object', required: ['name'], properties: responses_schema_1.JSON_SCHEMA_FORMAT_FIELDS },
        },
    },
};
exports.chatSchema = {
    $id: 'ChatCompletionRequest',
    type: 'object',
    additionalProperties: false,
    required: ['messages'],
    anyOf: [{ required: ['model'] }, { required: ['models'], properties: { models: { minItems: 1 } } }],
    properties: {
        model: { type: 'string', minLength: 1, maxLength: 512 },
        models: { type: 'array', maxItems: 10, items: { type: 'string', minLength: 1, maxLength: 512 } },
        messages: { type: 'array', minItems: 1, items: message },
        tools: { type: 'array', maxItems: 128, items: tool },
        tool_choice: toolChoice,
        parallel_tool_calls: (0, responses_schema_1.nullable)({ type: 'boolean' }),
        max_tokens: (0, responses_schema_1.nullable)({ type: 'integer', minimum: 1 }),
        max_completion_tokens: (0, responses_schema_1.nullable)({ type: 'integer', minimum: 1 }),
        temperature: (0, responses_schema_1.nullable)({ type: 'number', minimum: 0, maximum: 2 }),
        top_p: (0, responses_schema_1.nullable)({ type: 'number', minimum: 0, maximum: 1 }),
        top_k: (0, responses_schema_1.nullable)({ type: 'integer', minimum: 0 }),
        presence_penalty: (0, responses_schema_1.nullable)({ type: 'number', minimum: -2, maximum: 2 }),
        frequency_penalty: (0, responses_schema_1.nullable)({ type: 'number', minimum: -2, maximum: 2 }),
        stop: { type: ['string', 'array', 'null'], maxItems: 4, items: { type: 'string' } },
        seed: (0, responses_schema_1.nullable)({ type: 'integer' }),
        // Only one choice per request is supported.
        n: { type: ['integer', 'null'], enum: [1, null] },
        logprobs: (0, responses_schema_1.nullable)({ type: 'boolean' }),
        top_logprobs: (0, responses_schema_1.nullable)({ type: 'integer', minimum: 0, maximum: 20 }),
        response_format: responseFormat,
        reasoning_effort: (0, responses_schema_1.nullable)({ type: 'string', enum: [...responses_schema_1.REASONING_EFFORT_VALUES] }),
        reasoning: (0, responses_schema_1.nullable)({
            ...responses_schema_1.reasoningSchema,
            properties: { ...responses_schema_1.reasoningSchema.properties, exclude: { type: 'boolean' } },
        }),
        stream: (0, responses_schema_1.nullable)({ type: 'boolean' }),
        stream_options: (0, responses_schema_1.nullable)({
            type: 'object',
            additionalProperties: false,
            properties: { include_usage: { type: 'boolean' }, include_obfuscation: { type: 'boolean' } },
        }),
        user: { type: 'string', maxLength: 512 },
        metadata: responses_schema_1.metadataSchema,
        provider: routing_schema_1.routingSchema,
        prompt_cache_key: (0, responses_schema_1.nullable)({ type: 'string', maxLength: 1024 }),
        session_id: { type: 'string', minLength: 1, maxLength: 256 },
        store: (0, responses_schema_1.nullable)({ type: 'boolean' }),
        plugins: { type: 'array', uniqueItems: true, items: { enum: [...responses_schema_1.PLUGIN_NAMES] } },
        // Tolerated standard OpenAI fields (see the header comment).
        safety_identifier: (0, responses_schema_1.nullable)({ type: 'string', maxLength: 512 }),
        service_tier: (0, responses_schema_1.nullable)({ type: 'string' }),
        logit_bias: (0, responses_schema_1.nullable)({ type: 'object', additionalProperties: { type: 'number' } }),
        verbosity: (0, responses_schema_1.nullable)({ type: 'string', enum: ['low', 'medium', 'high'] }),
        prompt_cache_retention: (0, responses_schema_1.nullable)({ type: 'string' }),
        modalities: (0, responses_schema_1.nullable)({ type: 'array', items: { const: 'text' } }),
    },
};
