"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.imageGenerationSchema = exports.IMAGE_RULES = exports.IMAGE_QUALITIES = exports.IMAGE_SIZES = exports.IMAGE_N_MAX = exports.LEGACY_IMAGE_PROMPT_MAX = exports.IMAGE_PROMPT_MAX = void 0;
exports.imageGenerationIssues = imageGenerationIssues;
const routing_schema_1 = require("./routing.schema");
exports.IMAGE_PROMPT_MAX = 32000;
exports.LEGACY_IMAGE_PROMPT_MAX = 4000;
exports.IMAGE_N_MAX = 10;
exports.IMAGE_SIZES = ['auto', '256x256', '512x512', '1024x1024', '1536x1024', '1024x1536', '1792x1024', '1024x1792'];
exports.IMAGE_QUALITIES = ['auto', 'low', 'medium', 'high', 'standard', 'hd'];
/** What each model generation accepts (`auto` is the default everywhere and always accepted). */
exports.IMAGE_RULES = {
    legacy: {
        sizes: ['auto', '256x256', '512x512', '1024x1024', '1792x1024', '1024x1792'],
        qualities: ['auto', 'standard', 'hd'],
    },
    newer: {
        sizes: ['auto', '1024x1024', '1536x1024', '1024x1536'],
        qualities: ['auto', 'low', 'medium', 'high'],
    },
};
exports.imageGenerationSchema = {
    $id: 'ImageGenerationRequest',
    type: 'object',
    additionalProperties: false,
    required: ['model', 'prompt'],
    properties: {
        model: { type: 'string', minLength: 1, maxLength: 512 },
        prompt: { type: 'string', minLength: 1, maxLength: exports.IMAGE_PROMPT_MAX },
        n: { type: 'integer', minimum: 1, maximum: exports.IMAGE_N_MAX, default: 1 },
        size: { enum: [...exports.IMAGE_SIZES], default: 'auto' },
        quality: { enum: [...exports.IMAGE_QUALITIES], default: 'auto' },
        response_format: { enum: ['url', 'b64_json'], default: 'url' },
        style: { enum: ['vivid', 'natural'] },
        output_format: { enum: ['png', 'jpeg', 'webp'] },
        background: { enum: ['transparent', 'opaque', 'auto'], default: 'auto' },
        output_compression: { type: 'integer', minimum: 0, maximum: 100 },
        moderation: { enum: ['low', 'auto'] },
        user: { type: 'string', maxLength: 512 },
        provider: routing_schema_1.routingSchema,
    },
};
/**
 * The rules of the model generation, once the model is known. A value outside what the generation accepts is
 * a 400 (never silently dropped): `legacy` is the catalog flag of the model's endpoints; `maxImages` the
 * smallest `maxImages` of the endpoints that may serve the request.
 */
function imageGenerationIssues(body, model) {
    const issues = [];
    const rules = model.legacy ? exports.IMAGE_RULES.legacy : exports.IMAGE_RULES.newer;
    const which = model.legacy ? `the legacy image model ${model.id}` : `${model.id}`;
    const allowed = (values) => values.join(', ');
    if (model.legacy) {
        if (body.n !== 1)
            issues.push({ path: '/n', message: `must be 1 for ${which}` });
        if (body.prompt.length > exports.LEGACY_IMAGE_PROMPT_MAX)
            issues.push({ path: '/prompt', message: `must NOT have more than ${exports.LEGACY_IMAGE_PROMPT_MAX} characters for ${which}` });
        if (body.output_format !== undefined)
            issues.push({ path: '/output_format', message: `is not supported by ${which}` });
        if (body.background !== 'auto')
            issues.push({ path: '/background', message: `is not supported by ${which}` });
        if (body.output_compression !== undefined)
            issues.push({ path: '/output_compression', message: `is not supported by ${which}` });
        if (body.moderation !== undefined)
            issues.push({ path: '/moderation', message: `is not supported by ${which}` });
    }
    else {
        if (body.style !== undefined)
            issues.push({ path: '/style', message: `is supported by the legacy image model only, not by ${which}` });
        if (model.maxImages !== undefined && body.n > model.maxImages)
            issues.push({ path: '/n', message: `must be at most ${model.maxImages} for ${which}` });
        if (body.background === 'transparent' && body.output_format === 'jpeg')
            issues.push({ path: '/background', message: 'transparent needs output_format png or webp' });
    }
    if (!rules.sizes.includes(body.size))
        issues.push({ path: '/size', message: `must be one of ${allowed(rules.sizes)} for ${which}` });
    if (!rules.qualities.includes(body.quality))
        issues.push({ path: '/quality', message: `must be one of ${allowed(rules.qualities)} for ${which}` });
    return issues;
}
