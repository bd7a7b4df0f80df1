"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ImageExecutor = void 0;
exports.imageRequestFor = imageRequestFor;
const media_mapper_1 = require("../../shared/formats/media.mapper");
const upstream_error_1 = require("../../shared/providers/upstream-error");
const attempt_loop_1 = require("./attempt-loop");
const IMAGE_FORMATS = new Set(['png', 'jpeg', 'webp']);
const QUALITIES = new Set(['auto', 'low', 'medium', 'high', 'standard', 'hd']);
/**
 * The image request for one endpoint: the /images/generations request as the caller gave it, or (POST
 * /v1/media with an image model) the media input mapped onto it, minus what the endpoint does not support.
 */
function imageRequestFor(data, candidate, upstreamModel) {
    if (data.image)
        return { ...data.image.request, model: upstreamModel };
    const drop = new Set(candidate.dropParams);
    const input = Object.fromEntries(Object.entries(data.input).filter(([k]) => !drop.has(k)));
    const req = { model: upstreamModel, prompt: String(input.prompt ?? '') };
    if (typeof input.max_images === 'number')
        req.n = input.max_images;
    if (typeof input.output_format === 'string' && IMAGE_FORMATS.has(input.output_format))
        req.outputFormat = input.output_format;
    if (typeof input.quality === 'string' && QUALITIES.has(input.quality))
        req.quality = input.quality;
    return req;
}
/**
 * One synchronous call to an endpoint's `images` operation (OpenAI's /images/generations); every image is
 * stored (base64 replies decoded, URL replies downloaded) and comes back as our own file.
 */
class ImageExecutor {
    deps;
    store;
    constructor(deps, store) {
        this.deps = deps;
        this.store = store;
    }
    /** `signal` aborts the upstream call and the downloads (the generation was cancelled). */
    async generate(data, c, signal) {
        const images = c.adapter.images;
        const req = imageRequestFor(data, c.candidate, c.resolved.endpoint.upstreamModel);
        const reply = await (0, attempt_loop_1.upstreamRequest)(this.deps, c, images.buildRequest(req, c.resolved.provider.apiKey ?? ''), signal);
        const result = images.parseResponse(reply.json);
        if (result.images.length === 0)
            throw (0, upstream_error_1.upstreamError)({ kind: 'malformed', message: 'the images reply holds no image', raw: reply.text.slice(0, 2000) });
        const mime = (0, media_mapper_1.imageMimeType)(result.outputFormat ?? req.outputFormat);
        const outputs = [];
        for (const image of result.images) {
            const saved = image.b64 !== undefined ? await this.store.saveBytes(data, Buffer.from(image.b64, 'base64'), mime) : await this.store.download(data, image.url ?? '', 'image', signal);
            outputs.push({ url: saved.url, fileId: saved.fileId, mimeType: saved.mimeType, ...(image.revisedPrompt !== undefined && { revisedPrompt: image.revisedPrompt }) });
        }
        return { outputs, ...(result.usage && { tokens: { input: result.usage.inputTokens, output: result.usage.outputTokens } }) };
    }
}
exports.ImageExecutor = ImageExecutor;
