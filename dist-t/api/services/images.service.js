"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ImagesService = void 0;
const api_keys_1 = require("../../shared/auth/api-keys");
const pricing_1 = require("../../shared/billing/pricing");
const blob_store_1 = require("../../shared/storage/blob-store");
const app_error_1 = require("../../shared/errors/app-error");
const media_mapper_1 = require("../../shared/formats/media.mapper");
const queue_names_1 = require("../../shared/queue/queue-names");
const ajv_1 = require("../../shared/schemas/ajv");
const images_schema_1 = require("../../shared/schemas/images.schema");
const generation_gateway_1 = require("./generation-gateway");
/** Null-valued optional fields count as absent (OpenAI accepts `null` for them, and so do many clients). */
function withoutNulls(body) {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
        return body;
    return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null));
}
/**
 * POST /v2/images/generations (interface.md; decisions.md section 6): validate, route, bound, reserve and enqueue
 * through the gateway, wait up to SYNC_WAIT_MS, and answer the OpenAI image result (or the pending body).
 */
class ImagesService {
    d;
    constructor(d) {
        this.d = d;
    }
    async generate(c, raw) {
        const body = (0, ajv_1.check)(images_schema_1.imageGenerationSchema, withoutNulls(raw ?? {}));
        const route = await this.d.planner.plan({ principal: c.principal, model: body.model, provider: body.provider, modelType: 'image' });
        // The stricter rules hold when any endpoint that may serve the request is legacy.
        const legacy = route.endpoints.some((e) => e.legacy === true);
        const caps = route.endpoints.map((e) => e.maxImages).filter((m) => m !== undefined);
        const issues = (0, images_schema_1.imageGenerationIssues)(body, { legacy, maxImages: caps.length ? Math.min(...caps) : undefined, id: route.primary.id });
        if (issues.length)
            throw app_error_1.AppError.validation(issues);
        const request = { prompt: body.prompt, n: body.n };
        if (body.size !== 'auto')
            request.size = body.size;
        if (body.quality !== 'auto')
            request.quality = body.quality;
        if (legacy) {
            if (body.style)
                request.style = body.style;
            // Legacy models answer URLs by default; base64 spares a download.
            request.responseFormat = 'b64_json';
        }
        else {
            if (body.background !== 'auto')
                request.background = body.background;
            if (body.output_format)
                request.outputFormat = body.output_format;
            if (body.output_compression !== undefined)
                request.outputCompression = body.output_compression;
        }
        if (body.user)
            request.user = body.user;
        const sub = await this.d.gateway.order({
            queue: queue_names_1.QUEUES.image,
            id: (0, api_keys_1.newId)('gen'),
            caller: c,
            requestType: 'image',
            apiType: 'images',
            mode: 'sync',
            ...(0, generation_gateway_1.routed)(route),
            request: body,
            routingQueue: true,
            recordWarnings: route.plan.warnings,
            bound: (0, pricing_1.maxBound)(route.endpoints, (e) => (0, media_mapper_1.mediaCost)(e.price, (0, media_mapper_1.boundUnits)('image', { images: body.n }))),
            job: () => ({ kind: 'image', input: {}, image: { request, responseFormat: body.response_format }, inputUnits: 0, callBackUrl: null }),
        });
        const final = await this.d.records.wait(sub);
        const g = await this.d.records.load(sub.id);
        if (final?.type === 'failed' || g.status === 'failed')
            throw app_error_1.AppError.fromStored(final?.type === 'failed' ? final.error : g.error);
        if (g.status === 'cancelled')
            throw new app_error_1.AppError('CONFLICT', 'The generation was cancelled');
        if (g.status !== 'completed')
            return { status: 202, body: (0, media_mapper_1.pendingImageBody)(g), headers: { 'Retry-After': String((0, media_mapper_1.retryAfterSeconds)('image')) } };
        const base64 = body.response_format === 'b64_json' ? await this.base64Of(g) : undefined;
        return { status: 200, body: (0, media_mapper_1.imageResult)(g, base64) };
    }
    /** The stored images of a generation as base64 (response_format b64_json). */
    async base64Of(g) {
        const outputs = g.result?.outputs ?? [];
        const out = [];
        for (const o of outputs) {
            const file = await this.d.files.get(g.organizationId, o.fileId);
            const blob = file && (await this.d.files.content(file));
            if (!blob)
                throw new app_error_1.AppError('INTERNAL_ERROR', 'A generated image is missing from storage');
            out.push((await (0, blob_store_1.readAll)(blob.body)).toString('base64'));
        }
        return out;
    }
}
exports.ImagesService = ImagesService;
