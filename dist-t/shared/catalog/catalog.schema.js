"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.PROVIDER_KINDS = exports.catalogSchema = void 0;
const catalog_types_1 = require("./catalog.types");
Object.defineProperty(exports, "PROVIDER_KINDS", { enumerable: true, get: function () { return catalog_types_1.PROVIDER_KINDS; } });
const decimal = { anyOf: [{ type: 'number' }, { type: 'string', pattern: '^-?\\d+(\\.\\d+)?$' }] };
/** JSON Schema of config/catalog.json (decisions.md section 1). Cross-references are checked in code. */
exports.catalogSchema = {
    $id: 'catalog',
    type: 'object',
    required: ['providers', 'models'],
    additionalProperties: false,
    properties: {
        $schema: { type: 'string' },
        providers: {
            type: 'object',
            additionalProperties: {
                type: 'object',
                required: ['kind', 'baseUrl'],
                additionalProperties: false,
                properties: {
                    kind: { type: 'string' },
                    baseUrl: { type: 'string', pattern: '^https?://' },
                    apiKeyEnv: { type: 'string', pattern: '^[A-Z_][A-Z0-9_]*$' },
                    region: { type: 'string', minLength: 1 },
                    timeoutMs: { type: 'integer', minimum: 100 },
                    maxConcurrency: { type: 'integer', minimum: 0 },
                },
            },
        },
        models: {
            type: 'object',
            additionalProperties: {
                type: 'object',
                required: ['displayName', 'type', 'endpoints'],
                additionalProperties: false,
                properties: {
                    displayName: { type: 'string', minLength: 1 },
                    type: { enum: [...catalog_types_1.MODEL_TYPES] },
                    endpoints: {
                        type: 'array',
                        minItems: 1,
                        items: {
                            type: 'object',
                            required: ['provider', 'upstreamModel', 'price'],
                            additionalProperties: false,
                            properties: {
                                provider: { type: 'string' },
                                upstreamModel: { type: 'string', minLength: 1 },
                                price: { type: 'object', additionalProperties: false, properties: Object.fromEntries(catalog_types_1.PRICE_FIELDS.map((f) => [f, decimal])) },
                                supports: { type: 'array', items: { type: 'string' }, uniqueItems: true },
                                contextLength: { type: 'integer', minimum: 1 },
                                maxOutputTokens: { type: 'integer', minimum: 1 },
                                maxDimensions: { type: 'integer', minimum: 1 },
                                defaultDimensions: { type: 'integer', minimum: 1 },
                                multimodal: { type: 'boolean' },
                                maxImages: { type: 'integer', minimum: 1 },
                                maxDurationSeconds: { type: 'number', exclusiveMinimum: 0 },
                                legacy: { type: 'boolean' },
                                operations: { type: 'array', items: { enum: [...catalog_types_1.MEDIA_OPERATIONS] }, uniqueItems: true },
                            },
                        },
                    },
                },
            },
        },
    },
};
