"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MediaService = void 0;
const api_keys_1 = require("../../shared/auth/api-keys");
const pricing_1 = require("../../shared/billing/pricing");
const app_error_1 = require("../../shared/errors/app-error");
const media_mapper_1 = require("../../shared/formats/media.mapper");
const queue_names_1 = require("../../shared/queue/queue-names");
const ajv_1 = require("../../shared/schemas/ajv");
const media_schema_1 = require("../../shared/schemas/media.schema");
const job_catalog_1 = require("../../shared/queue/job-catalog");
const generation_gateway_1 = require("./generation-gateway");
const generation_service_1 = require("../../shared/services/generation.service");
const MEDIA_TYPES = ['image', 'video', 'audio', 'upscale'];
/** Input fields every media model takes (never reported as unsupported). */
const ALWAYS_HONOURED = new Set(['prompt', 'callBackUrl']);
/**
 * General media generations (interface.md "POST /v1/media", "GET /v1/media/{id}"; decisions.md sections 4 and 5
 * for cancel): validate, route, bound, reserve and enqueue through the gateway, then wait up to SYNC_WAIT_MS.
 * Operations on a finished generation are media-operations.service.ts.
 */
class MediaService {
    d;
    constructor(d) {
        this.d = d;
    }
    // ---------- POST /v1/media ----------
    async create(c, raw) {
        const body = (0, ajv_1.check)(media_schema_1.mediaCreateSchema, raw ?? {});
        const requested = Object.keys(body.input).filter((k) => !ALWAYS_HONOURED.has(k) && body.input[k] !== undefined);
        const route = await this.d.planner.plan({ principal: c.principal, model: body.model, provider: body.provider, modelType: MEDIA_TYPES, requestedParameters: requested });
        const kind = route.primary.type;
        if (kind !== 'upscale' && !body.input.prompt)
            throw app_error_1.AppError.validation([{ path: '/input/prompt', message: `is required for ${kind} models` }]);
        if (kind === 'upscale' && !body.input.images?.length)
            throw app_error_1.AppError.validation([{ path: '/input/images', message: 'an upscale model needs at least one image' }]);
        const caps = route.endpoints.map((e) => e.maxImages).filter((m) => m !== undefined);
        if (body.input.max_images !== undefined && caps.length && body.input.max_images > Math.min(...caps)) {
            throw app_error_1.AppError.validation([{ path: '/input/max_images', message: `must be at most ${Math.min(...caps)} for ${route.primary.id}` }]);
        }
        const callBackUrl = await this.d.records.checkCallback(body.input.callBackUrl, '/input/callBackUrl');
        const input = { ...body.input };
        delete input.callBackUrl;
        const seconds = kind === 'video' || kind === 'audio' ? body.input.duration : undefined;
        // Per endpoint: a video reserves the endpoint's longest output when the catalog names it (maxDurationSeconds).
        const units = (e) => (0, media_mapper_1.boundUnits)(kind, { images: body.input.max_images ?? 1, seconds: (0, media_mapper_1.boundSeconds)(e, seconds), prompt: body.input.prompt });
        const first = route.candidates[0];
        const sub = await this.d.gateway.order({
            queue: kind === 'image' ? queue_names_1.QUEUES.image : queue_names_1.QUEUES.media,
            id: (0, api_keys_1.newId)('gen'),
            caller: c,
            requestType: kind,
            apiType: 'media',
            mode: body.async ? 'async' : 'sync',
            ...(0, generation_gateway_1.routed)(route),
            request: body,
            routingQueue: true,
            recordWarnings: [...route.plan.warnings, ...(route.plan.warningsByEndpoint[first.slug] ?? [])],
            bound: (0, pricing_1.maxBound)(route.endpoints, (e) => (0, media_mapper_1.mediaCost)(e.price, units(e))),
            callBackUrl,
            job: () => ({ kind, input, inputUnits: body.input.images?.length ?? 0, ...(kind === 'video' || kind === 'audio' ? { expectedSeconds: body.input.duration } : {}), callBackUrl: callBackUrl ?? null }),
        });
        return this.d.records.answer(sub, body.async);
    }
    // ---------- GET /v1/media/{id} ----------
    async get(c, id) {
        const g = await this.d.records.visible(c.principal, id);
        return { status: 200, body: (0, media_mapper_1.mediaRecord)(g), headers: this.d.records.hint(g) };
    }
    // ---------- POST /v1/media/{id}/cancel ----------
    async cancel(c, id) {
        const g = await this.d.records.visible(c.principal, id);
        const notCancellable = (status) => app_error_1.AppError.fromReason('not_cancellable', `The generation is ${status} and can no longer be cancelled`);
        if (!generation_service_1.RUNNING.has(g.status))
            throw notCancellable(g.status);
        const queue = (0, job_catalog_1.queueOfGeneration)(g);
        if (!(await this.d.gateway.cancel(id, queue)))
            throw notCancellable((await this.d.records.load(id)).status);
        // A cancelled generation keeps no output: whatever the worker stored before the cancel won goes now, and
        // what it stores after is removed by the worker when its settlement finds the generation cancelled.
        await this.d.files.discardUnkept(id);
        if (g.callBackUrl)
            await this.d.callbacks.enqueue({ generationId: id, organizationId: g.organizationId, url: g.callBackUrl, status: 'cancelled' });
        const after = await this.d.records.load(id);
        return { status: 200, body: (0, media_mapper_1.mediaRecord)(after) };
    }
}
exports.MediaService = MediaService;
