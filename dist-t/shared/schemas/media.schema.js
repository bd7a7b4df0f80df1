"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.mediaOperationSchema = exports.upscaleParamsSchema = exports.extendParamsSchema = exports.mediaCreateSchema = exports.mediaInputSchema = exports.EXTEND_DURATION = exports.MEDIA_PROMPT_MAX = void 0;
/**
 * POST /v1/media and POST /v1/media/{id}/operations bodies (interface.md "POST /v1/media",
 * "POST /v1/media/{id}/operations"). The payload of media and image jobs is in shared/queue/job-catalog.ts.
 *
 * `input` fields are typed as the interface implies; fields it does not list are accepted and passed to the
 * provider as model-specific inputs. Whether the chosen model honours a field is decided by its catalog
 * `supports` list: a field it does not support is dropped with a warning (or, with
 * `provider.require_parameters`, the endpoint is excluded).
 */
const catalog_types_1 = require("../catalog/catalog.types");
const routing_schema_1 = require("./routing.schema");
exports.MEDIA_PROMPT_MAX = 32000;
exports.EXTEND_DURATION = { min: 3, max: 10 };
const url = { type: 'string', minLength: 1, maxLength: 8192, pattern: '^(https?://|data:)' };
exports.mediaInputSchema = {
    type: 'object',
    properties: {
        prompt: { type: 'string', minLength: 1, maxLength: exports.MEDIA_PROMPT_MAX },
        negative_prompt: { type: 'string', maxLength: exports.MEDIA_PROMPT_MAX },
        aspect_ratio: { type: 'string', minLength: 1, maxLength: 32 },
        images: {
            type: 'array',
            maxItems: 16,
            items: {
                type: 'object',
                required: ['type', 'data'],
                additionalProperties: false,
                properties: { type: { enum: ['url', 'base64'] }, data: { type: 'string', minLength: 1 } },
                if: { properties: { type: { const: 'url' } } },
                then: { properties: { data: url } },
            },
        },
        callBackUrl: { type: 'string', minLength: 1, maxLength: 2048 },
        seed: { type: 'integer', minimum: 0, maximum: 4294967295 },
        watermark: { type: 'string', maxLength: 512 },
        image_resolution: { type: 'string', maxLength: 32 },
        quality: { type: 'string', maxLength: 32 },
        output_format: { type: 'string', maxLength: 16 },
        max_images: { type: 'integer', minimum: 1, maximum: 10 },
        isEnhance: { type: 'boolean' },
        guidance_scale: { type: 'number', minimum: 0, maximum: 100 },
        strength: { type: 'number', minimum: 0, maximum: 1 },
        enable_safety_checker: { type: 'boolean' },
        upscale_factor: { type: 'string', maxLength: 16 },
        font_inputs: {
            type: 'array',
            maxItems: 16,
            items: {
                type: 'object',
                required: ['font_url', 'text'],
                additionalProperties: false,
                properties: { font_url: url, text: { type: 'string', maxLength: 4000 } },
            },
        },
        super_resolution_references: { type: 'array', maxItems: 16, items: url },
        /** Our extension: requested length of a video or audio result, seconds. */
        duration: { type: 'number', exclusiveMinimum: 0, maximum: 600 },
    },
};
exports.mediaCreateSchema = {
    $id: 'MediaGenerationRequest',
    type: 'object',
    additionalProperties: false,
    required: ['model', 'input'],
    properties: {
        model: { type: 'string', minLength: 1, maxLength: 512 },
        input: exports.mediaInputSchema,
        provider: routing_schema_1.routingSchema,
        async: { type: 'boolean', default: false },
        user: { type: 'string', maxLength: 512 },
    },
};
const callBackUrl = { type: 'string', minLength: 1, maxLength: 2048 };
exports.extendParamsSchema = {
    type: 'object',
    additionalProperties: false,
    required: ['prompt'],
    properties: {
        prompt: { type: 'string', minLength: 1, maxLength: exports.MEDIA_PROMPT_MAX },
        seeds: { type: 'integer', minimum: 0, maximum: 4294967295 },
        duration: { type: 'number', minimum: exports.EXTEND_DURATION.min, maximum: exports.EXTEND_DURATION.max },
        callBackUrl,
    },
};
exports.upscaleParamsSchema = {
    type: 'object',
    additionalProperties: false,
    properties: { callBackUrl },
};
exports.mediaOperationSchema = {
    $id: 'MediaOperationRequest',
    type: 'object',
    additionalProperties: false,
    required: ['operation'],
    properties: {
        operation: { enum: [...catalog_types_1.MEDIA_OPERATIONS] },
        params: { type: 'object' },
        async: { type: 'boolean', default: false },
    },
    allOf: [
        { if: { required: ['operation'], properties: { operation: { const: 'extend' } } }, then: { required: ['params'], properties: { params: exports.extendParamsSchema } } },
        { if: { required: ['operation'], properties: { operation: { enum: ['upscale_1080p', 'upscale_4k'] } } }, then: { properties: { params: exports.upscaleParamsSchema } } },
    ],
};
