"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.REPLICATE_INPUT_FIELDS = void 0;
exports.replicateHeaders = replicateHeaders;
exports.replicateInput = replicateInput;
exports.buildCreatePrediction = buildCreatePrediction;
exports.buildGetPrediction = buildGetPrediction;
exports.buildCancelPrediction = buildCancelPrediction;
const mapper_utils_1 = require("../mapper-utils");
function replicateHeaders(apiKey) {
    return { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/json' };
}
const rename = (to) => (value) => ({ [to]: value });
/** An image of the public `images` list as a URL Replicate can fetch (base64 data becomes a data: URL). */
function imageUrl(item) {
    if (!(0, mapper_utils_1.isRecord)(item) || typeof item.data !== 'string')
        return (0, mapper_utils_1.unsupported)('images: each item needs a string `data`');
    if (item.type === 'base64' && !item.data.startsWith('data:'))
        return `data:image/png;base64,${item.data}`;
    return item.data;
}
/**
 * The parameter table: our public input name → Replicate's common input name(s). Names not in the table are
 * passed through unchanged (model-specific inputs); `callBackUrl` is ours and never sent.
 */
exports.REPLICATE_INPUT_FIELDS = new Map([
    ['prompt', rename('prompt')],
    ['negative_prompt', rename('negative_prompt')],
    ['aspect_ratio', rename('aspect_ratio')],
    [
        'images',
        (value) => {
            const urls = (Array.isArray(value) ? value : []).map(imageUrl);
            if (urls.length === 0)
                return undefined;
            return urls.length === 1 ? { image: urls[0] } : { image: urls[0], image_input: urls };
        },
    ],
    ['seed', rename('seed')],
    ['watermark', rename('watermark')],
    ['image_resolution', rename('resolution')],
    ['quality', rename('quality')],
    ['output_format', rename('output_format')],
    ['output_compression', rename('output_quality')],
    ['max_images', rename('num_outputs')],
    ['isEnhance', rename('enhance_prompt')],
    ['guidance_scale', rename('guidance')],
    ['strength', rename('prompt_strength')],
    ['enable_safety_checker', (value) => ({ disable_safety_checker: value === false })],
    ['upscale_factor', rename('upscale_factor')],
    ['font_inputs', rename('font_inputs')],
    ['super_resolution_references', rename('super_resolution_references')],
    ['duration', rename('duration')],
    ['video', rename('video')],
    ['image', rename('image')],
    ['target_resolution', rename('target_resolution')],
    ['callBackUrl', null],
]);
function replicateInput(input) {
    const out = {};
    for (const [name, value] of Object.entries(input)) {
        if (value === undefined)
            continue;
        const field = exports.REPLICATE_INPUT_FIELDS.get(name);
        if (field === null)
            continue;
        Object.assign(out, field ? field(value, input) : { [name]: value });
    }
    return out;
}
const MODEL = /^([^/\s:]+)\/([^/\s:]+)(?::([0-9a-zA-Z]+))?$/;
function buildCreatePrediction(req, apiKey) {
    const m = MODEL.exec(req.model);
    if (!m)
        return (0, mapper_utils_1.unsupported)(`Replicate model must be "owner/name" or "owner/name:version", got "${req.model}"`);
    const input = replicateInput(req.input);
    if (m[3])
        return { method: 'POST', path: '/predictions', headers: replicateHeaders(apiKey), body: { version: m[3], input } };
    return { method: 'POST', path: `/models/${encodeURIComponent(m[1])}/${encodeURIComponent(m[2])}/predictions`, headers: replicateHeaders(apiKey), body: { input } };
}
function buildGetPrediction(id, apiKey) {
    return { method: 'GET', path: `/predictions/${encodeURIComponent(id)}`, headers: replicateHeaders(apiKey) };
}
function buildCancelPrediction(id, apiKey) {
    return { method: 'POST', path: `/predictions/${encodeURIComponent(id)}/cancel`, headers: replicateHeaders(apiKey) };
}
