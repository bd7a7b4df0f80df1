"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MediaOperationsService = void 0;
const api_keys_1 = require("../../shared/auth/api-keys");
const pricing_1 = require("../../shared/billing/pricing");
const catalog_index_1 = require("../../shared/catalog/catalog-index");
const app_error_1 = require("../../shared/errors/app-error");
const media_mapper_1 = require("../../shared/formats/media.mapper");
const queue_names_1 = require("../../shared/queue/queue-names");
const ajv_1 = require("../../shared/schemas/ajv");
const media_schema_1 = require("../../shared/schemas/media.schema");
const generation_service_1 = require("../../shared/services/generation.service");
/**
 * POST /v1/media/{id}/operations (interface.md): extend a video, or upscale a finished image or video, as a new
 * generation over the source's result file, through the gateway like every other generation.
 */
class MediaOperationsService {
    d;
    constructor(d) {
        this.d = d;
    }
    async operate(c, sourceId, raw) {
        const body = (0, ajv_1.check)(media_schema_1.mediaOperationSchema, raw ?? {});
        const source = await this.d.records.visible(c.principal, sourceId);
        const sourceSlug = source.finalEndpointSlug ?? source.routing?.candidates?.[0];
        const resolved = sourceSlug ? (0, catalog_index_1.endpointBySlug)(this.d.catalog, sourceSlug) : undefined;
        const offered = resolved?.endpoint.operations ?? [];
        if (!offered.includes(body.operation)) {
            throw app_error_1.AppError.validation([{ path: '/operation', message: `${body.operation} is not available for ${source.unifiedModelId}; it offers ${offered.length ? offered.join(', ') : 'no operations'}` }]);
        }
        // Rule 4: while the source is being prepared the reply is the source itself, `processing`, uncharged.
        if (generation_service_1.RUNNING.has(source.status))
            return { status: 202, body: (0, media_mapper_1.mediaRecord)(source, { status: 'processing' }), headers: this.d.records.hint(source) };
        if (source.status !== 'completed')
            throw new app_error_1.AppError('CONFLICT', `The source generation is ${source.status}; only a completed generation can be operated on`);
        const callBackUrl = await this.d.records.checkCallback(body.params?.callBackUrl, '/params/callBackUrl');
        const data = source.result?.data;
        if (!data?.url)
            throw new app_error_1.AppError('CONFLICT', 'The source generation has no result file');
        const sourceIsImage = data.mime_type?.startsWith('image/') ?? false;
        const sourceSeconds = data.duration_seconds;
        const sourceModel = resolved.model;
        const common = {
            queue: queue_names_1.QUEUES.media,
            id: (0, api_keys_1.newId)('gen'),
            caller: c,
            apiType: 'media',
            mode: body.async ? 'async' : 'sync',
            routingQueue: true,
            warnings: [],
            callBackUrl,
            sourceGenerationId: source.id,
        };
        if (body.operation === 'extend') {
            const params = body.params;
            const input = { prompt: params.prompt, video: data.url };
            if (params.seeds !== undefined)
                input.seed = params.seeds;
            if (params.duration !== undefined)
                input.duration = params.duration;
            const sub = await this.d.gateway.order({
                ...common,
                requestType: 'video',
                // interface.md: a just-created asynchronous generation may carry the literal `pending` as its model.
                model: 'pending',
                primary: sourceModel,
                request: { operation: body.operation, params: body.params, source: source.id },
                candidates: [{ model: sourceModel.id, slug: resolved.endpoint.slug, dropParams: [] }],
                bound: (0, media_mapper_1.mediaCost)(resolved.endpoint.price, { videoSeconds: (0, media_mapper_1.boundSeconds)(resolved.endpoint, params.duration) ?? media_mapper_1.DEFAULT_VIDEO_SECONDS }),
                job: () => ({ kind: 'video', input, inputUnits: 1, expectedSeconds: params.duration, callBackUrl: callBackUrl ?? null }),
            });
            return this.d.records.answer(sub, body.async, { model: 'pending' });
        }
        // Upscales run on the catalog's upscale model when there is one, else on the source's own endpoint.
        const target = body.operation === 'upscale_4k' ? '4k' : '1080p';
        const input = { [sourceIsImage ? 'image' : 'video']: data.url, target_resolution: target };
        const upscaler = Object.values(this.d.catalog.models).find((m) => m.type === 'upscale');
        let primary = sourceModel;
        let endpoints = [resolved.endpoint];
        let candidates = [{ model: sourceModel.id, slug: resolved.endpoint.slug, dropParams: [] }];
        if (upscaler) {
            const route = await this.d.planner.plan({ principal: c.principal, model: upscaler.id, modelType: 'upscale' });
            ({ primary, endpoints, candidates } = route);
        }
        // An upscaled video is as long as its source; unknown, the upscaler's longest output.
        const units = (e) => (sourceIsImage ? { images: 1 } : { videoSeconds: sourceSeconds ?? e.maxDurationSeconds ?? media_mapper_1.DEFAULT_VIDEO_SECONDS });
        const sub = await this.d.gateway.order({
            ...common,
            requestType: sourceIsImage ? 'image' : 'video',
            primary,
            request: { operation: body.operation, params: body.params ?? {}, source: source.id },
            candidates,
            bound: (0, pricing_1.maxBound)(endpoints, (e) => (0, media_mapper_1.mediaCost)(e.price, units(e))),
            job: () => ({ kind: 'upscale', input, inputUnits: 1, expectedSeconds: sourceIsImage ? undefined : sourceSeconds, sourceIsImage, callBackUrl: callBackUrl ?? null }),
        });
        return this.d.records.answer(sub, body.async);
    }
}
exports.MediaOperationsService = MediaOperationsService;
