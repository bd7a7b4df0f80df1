import type { Generation } from '../../shared/db/generated/client';
import { newId } from '../../shared/auth/api-keys';
import { maxBound } from '../../shared/billing/pricing';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import type { EndpointConfig, ModelConfig } from '../../shared/catalog/catalog.types';
import { readAll } from '../../shared/storage/blob-store';
import { AppError } from '../../shared/errors/app-error';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors/error-codes';
import {
  boundSeconds,
  boundUnits,
  DEFAULT_VIDEO_SECONDS,
  imageResult,
  mediaCost,
  mediaRecord,
  pendingImageBody,
  retryAfterSeconds,
  type MediaResult,
} from '../../shared/formats/media.mapper';
import type { ImageRequest, MediaInput } from '../../shared/providers/adapter.types';
import { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { PlannedCandidate } from '../../shared/queue/job-catalog';
import { QUEUES, type QueueName } from '../../shared/queue/queue-names';
import { check } from '../../shared/schemas/ajv';
import { imageGenerationIssues, imageGenerationSchema, type ImageGenerationBody } from '../../shared/schemas/images.schema';
import {
  mediaCreateSchema,
  mediaOperationSchema,
  type MediaCreateBody,
  type MediaJobData,
  type MediaKind,
  type MediaOperationBody,
} from '../../shared/schemas/media.schema';
import { CallbackService, CallbackUrlError, checkCallbackUrl } from '../../shared/services/callbacks.service';
import type { RequestType } from '../../shared/services/generation.service';
import type { AppContext } from '../app-context';
import { type Principal, ownerOf } from '../middleware/auth';
import type { FinalMessage, Submission } from './generation-gateway';
import type { IdempotencyClaim } from '../../shared/services/generation.service';

/** A reply: status, body, headers (Retry-After while a generation runs). */
export interface MediaReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * HTTP status of a media record reply: 200 once the generation has ended (completed, failed or cancelled; a
 * failure is reported inside the record, interface.md rule 3), 202 while it is pending or processing (the job
 * goes on; poll GET /v1/media/{id}).
 */
const RUNNING = new Set(['pending', 'processing']);
const MEDIA_TYPES: ModelConfig['type'][] = ['image', 'video', 'audio', 'upscale'];
/** Input fields every media model takes (never reported as unsupported). */
const ALWAYS_HONOURED = new Set(['prompt', 'callBackUrl']);

interface Ctx {
  principal: Principal;
  traceId: string;
  /** The request's Idempotency-Key, when it has one (docs/idempotency.md). */
  idempotency?: IdempotencyClaim;
}

interface Submit {
  c: Ctx;
  id: string;
  queue: QueueName;
  kind: MediaKind;
  requestType: RequestType;
  apiType: 'images' | 'media';
  mode: 'sync' | 'async';
  model: string;
  primary: ModelConfig;
  endpoints: EndpointConfig[];
  candidates: PlannedCandidate[];
  planWarnings: string[];
  warnings: string[];
  dropped?: unknown;
  request: unknown;
  job: Omit<MediaJobData, 'generationId' | 'organizationId' | 'apiKeyId' | 'userId' | 'candidates' | 'warnings' | 'replyTo' | 'traceId' | 'kind' | 'callBackUrl'>;
  bound: ReturnType<typeof mediaCost>;
  callBackUrl?: string;
  sourceGenerationId?: string;
}

/** Null-valued optional fields count as absent (OpenAI accepts `null` for them, and so do many clients). */
function withoutNulls(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null));
}

function errorFromMessage(error: { code: string; message: string; metadata?: Record<string, unknown> }): AppError {
  const code = (error.code in ERROR_CODES ? error.code : 'BAD_GATEWAY') as ErrorCode;
  return new AppError(code, error.message, { metadata: error.metadata });
}

/**
 * Images, media generations, operations and cancellation (interface.md "POST /v2/images/generations",
 * "/v1/media", "/v1/media/{id}/operations"; decisions.md sections 4 and 5): validate, route, reserve,
 * record and enqueue through the gateway, then wait up to SYNC_WAIT_MS for the worker.
 */
export class MediaService {
  private readonly callbacks: CallbackService;

  constructor(private readonly ctx: AppContext) {
    this.callbacks = new CallbackService(ctx.queues.callbacks);
  }

  // ---------- images ----------

  async generateImages(c: Ctx, raw: unknown): Promise<MediaReply> {
    const body = check<ImageGenerationBody>(imageGenerationSchema, withoutNulls(raw ?? {}));
    const route = await this.ctx.planner.plan({ principal: c.principal, model: body.model, provider: body.provider, modelType: 'image' });
    // The stricter rules hold when any endpoint that may serve the request is legacy.
    const legacy = route.endpoints.some((e) => e.legacy === true);
    const caps = route.endpoints.map((e) => e.maxImages).filter((m): m is number => m !== undefined);
    const issues = imageGenerationIssues(body, { legacy, maxImages: caps.length ? Math.min(...caps) : undefined, id: route.primary.id });
    if (issues.length) throw AppError.validation(issues);

    const request: Omit<ImageRequest, 'model'> = { prompt: body.prompt, n: body.n };
    if (body.size !== 'auto') request.size = body.size;
    if (body.quality !== 'auto') request.quality = body.quality;
    if (legacy) {
      if (body.style) request.style = body.style;
      // Legacy models answer URLs by default; base64 spares a download.
      request.responseFormat = 'b64_json';
    } else {
      if (body.background !== 'auto') request.background = body.background;
      if (body.output_format) request.outputFormat = body.output_format;
      if (body.output_compression !== undefined) request.outputCompression = body.output_compression;
    }
    if (body.user) request.user = body.user;

    const id = newId('gen');
    const sub = await this.submit({
      c,
      id,
      queue: QUEUES.image,
      kind: 'image',
      requestType: 'image',
      apiType: 'images',
      mode: 'sync',
      model: route.primary.id,
      primary: route.primary,
      endpoints: route.endpoints,
      candidates: route.candidates,
      planWarnings: route.plan.warnings,
      warnings: route.plan.warnings,
      dropped: route.plan.dropped,
      request: body,
      job: { input: {}, image: { request, responseFormat: body.response_format }, inputUnits: 0 },
      bound: maxBound(route.endpoints, (e) => mediaCost(e.price, boundUnits('image', { images: body.n }))),
    });
    const final = await this.wait(sub);
    const g = await this.load(sub.id);
    if (final?.type === 'failed' || g.status === 'failed') throw errorFromMessage(final?.type === 'failed' ? final.error : (g.error as { code: string; message: string }));
    if (g.status === 'cancelled') throw new AppError('CONFLICT', 'The generation was cancelled');
    if (g.status !== 'completed') return { status: 202, body: pendingImageBody(g), headers: { 'Retry-After': String(retryAfterSeconds('image')) } };
    const base64 = body.response_format === 'b64_json' ? await this.base64Of(g) : undefined;
    return { status: 200, body: imageResult(g, base64) };
  }

  /** The stored images of a generation as base64 (response_format b64_json). */
  private async base64Of(g: Generation): Promise<string[]> {
    const outputs = (g.result as unknown as MediaResult | null)?.outputs ?? [];
    const out: string[] = [];
    for (const o of outputs) {
      const file = await this.ctx.files.get(g.organizationId, o.fileId);
      const blob = file && (await this.ctx.files.content(file));
      if (!blob) throw new AppError('INTERNAL_ERROR', 'A generated image is missing from storage');
      out.push((await readAll(blob.body)).toString('base64'));
    }
    return out;
  }

  // ---------- POST /v1/media ----------

  async createMedia(c: Ctx, raw: unknown): Promise<MediaReply> {
    const body = check<MediaCreateBody>(mediaCreateSchema, raw ?? {});
    const requested = Object.keys(body.input).filter((k) => !ALWAYS_HONOURED.has(k) && body.input[k] !== undefined);
    const route = await this.ctx.planner.plan({ principal: c.principal, model: body.model, provider: body.provider, modelType: MEDIA_TYPES, requestedParameters: requested });
    const kind = route.primary.type as MediaKind;
    if (kind !== 'upscale' && !body.input.prompt) throw AppError.validation([{ path: '/input/prompt', message: `is required for ${kind} models` }]);
    if (kind === 'upscale' && !body.input.images?.length) throw AppError.validation([{ path: '/input/images', message: 'an upscale model needs at least one image' }]);
    const caps = route.endpoints.map((e) => e.maxImages).filter((m): m is number => m !== undefined);
    if (body.input.max_images !== undefined && caps.length && body.input.max_images > Math.min(...caps)) {
      throw AppError.validation([{ path: '/input/max_images', message: `must be at most ${Math.min(...caps)} for ${route.primary.id}` }]);
    }
    const callBackUrl = await this.checkCallback(body.input.callBackUrl, '/input/callBackUrl');

    const input: MediaInput = { ...body.input };
    delete input.callBackUrl;
    const seconds = kind === 'video' || kind === 'audio' ? body.input.duration : undefined;
    // Per endpoint: a video reserves the endpoint's longest output when the catalog names it (maxDurationSeconds).
    const units = (e: EndpointConfig) => boundUnits(kind, { images: body.input.max_images ?? 1, seconds: boundSeconds(e, seconds), prompt: body.input.prompt });
    const first = route.candidates[0];
    const id = newId('gen');
    const sub = await this.submit({
      c,
      id,
      queue: kind === 'image' ? QUEUES.image : QUEUES.media,
      kind,
      requestType: kind,
      apiType: 'media',
      mode: body.async ? 'async' : 'sync',
      model: route.primary.id,
      primary: route.primary,
      endpoints: route.endpoints,
      candidates: route.candidates,
      planWarnings: route.plan.warnings,
      warnings: [...route.plan.warnings, ...(route.plan.warningsByEndpoint[first.slug] ?? [])],
      dropped: route.plan.dropped,
      request: body,
      job: { input, inputUnits: body.input.images?.length ?? 0, ...(kind === 'video' || kind === 'audio' ? { expectedSeconds: body.input.duration } : {}) },
      bound: maxBound(route.endpoints, (e) => mediaCost(e.price, units(e))),
      callBackUrl,
    });
    return this.answer(sub, body.async);
  }

  // ---------- GET /v1/media/{id} ----------

  async get(c: Ctx, id: string): Promise<MediaReply> {
    const g = await this.visible(c.principal, id);
    return { status: 200, body: mediaRecord(g), headers: this.hint(g) };
  }

  // ---------- POST /v1/media/{id}/operations ----------

  async operate(c: Ctx, sourceId: string, raw: unknown): Promise<MediaReply> {
    const body = check<MediaOperationBody>(mediaOperationSchema, raw ?? {});
    const source = await this.visible(c.principal, sourceId);
    const sourceSlug = source.finalEndpointSlug ?? (source.routing as { candidates?: string[] } | null)?.candidates?.[0];
    const resolved = sourceSlug ? endpointBySlug(this.ctx.catalog, sourceSlug) : undefined;
    const offered = resolved?.endpoint.operations ?? [];
    if (!offered.includes(body.operation)) {
      throw AppError.validation([{ path: '/operation', message: `${body.operation} is not available for ${source.unifiedModelId}; it offers ${offered.length ? offered.join(', ') : 'no operations'}` }]);
    }
    // Rule 4: while the source is being prepared the reply is the source itself, `processing`, uncharged.
    if (RUNNING.has(source.status)) return { status: 202, body: mediaRecord(source, { status: 'processing' }), headers: this.hint(source) };
    if (source.status !== 'completed') throw new AppError('CONFLICT', `The source generation is ${source.status}; only a completed generation can be operated on`);
    const callBackUrl = await this.checkCallback(body.params?.callBackUrl, '/params/callBackUrl');
    const data = (source.result as unknown as MediaResult | null)?.data;
    if (!data?.url) throw new AppError('CONFLICT', 'The source generation has no result file');
    const sourceIsImage = data.mime_type?.startsWith('image/') ?? false;
    const sourceSeconds = data.duration_seconds;
    const id = newId('gen');
    const sourceModel = resolved!.model;

    if (body.operation === 'extend') {
      const params = body.params!;
      const input: MediaInput = { prompt: params.prompt, video: data.url };
      if (params.seeds !== undefined) input.seed = params.seeds;
      if (params.duration !== undefined) input.duration = params.duration;
      const candidate: PlannedCandidate = { model: sourceModel.id, slug: resolved!.endpoint.slug, dropParams: [] };
      const sub = await this.submit({
        c,
        id,
        queue: QUEUES.media,
        kind: 'video',
        requestType: 'video',
        apiType: 'media',
        mode: body.async ? 'async' : 'sync',
        // interface.md: a just-created asynchronous generation may carry the literal `pending` as its model.
        model: 'pending',
        primary: sourceModel,
        endpoints: [resolved!.endpoint],
        candidates: [candidate],
        planWarnings: [],
        warnings: [],
        request: { operation: body.operation, params: body.params, source: source.id },
        job: { input, inputUnits: 1, expectedSeconds: params.duration },
        bound: mediaCost(resolved!.endpoint.price, { videoSeconds: boundSeconds(resolved!.endpoint, params.duration) ?? DEFAULT_VIDEO_SECONDS }),
        callBackUrl,
        sourceGenerationId: source.id,
      });
      return this.answer(sub, body.async);
    }

    // Upscales run on the catalog's upscale model when there is one, else on the source's own endpoint.
    const target = body.operation === 'upscale_4k' ? '4k' : '1080p';
    const input: MediaInput = { [sourceIsImage ? 'image' : 'video']: data.url, target_resolution: target };
    const upscaler = Object.values(this.ctx.catalog.models).find((m) => m.type === 'upscale');
    let primary = sourceModel;
    let endpoints = [resolved!.endpoint];
    let candidates: PlannedCandidate[] = [{ model: sourceModel.id, slug: resolved!.endpoint.slug, dropParams: [] }];
    if (upscaler) {
      const route = await this.ctx.planner.plan({ principal: c.principal, model: upscaler.id, modelType: 'upscale' });
      ({ primary, endpoints, candidates } = route);
    }
    // An upscaled video is as long as its source; unknown, the upscaler's longest output.
    const units = (e: EndpointConfig) => (sourceIsImage ? { images: 1 } : { videoSeconds: sourceSeconds ?? e.maxDurationSeconds ?? DEFAULT_VIDEO_SECONDS });
    const sub = await this.submit({
      c,
      id,
      queue: QUEUES.media,
      kind: 'upscale',
      requestType: sourceIsImage ? 'image' : 'video',
      apiType: 'media',
      mode: body.async ? 'async' : 'sync',
      model: primary.id,
      primary,
      endpoints,
      candidates,
      planWarnings: [],
      warnings: [],
      request: { operation: body.operation, params: body.params ?? {}, source: source.id },
      job: { input, inputUnits: 1, expectedSeconds: sourceIsImage ? undefined : sourceSeconds, sourceIsImage },
      bound: maxBound(endpoints, (e) => mediaCost(e.price, units(e))),
      callBackUrl,
      sourceGenerationId: source.id,
    });
    return this.answer(sub, body.async);
  }

  // ---------- POST /v1/media/{id}/cancel ----------

  async cancel(c: Ctx, id: string): Promise<MediaReply> {
    const g = await this.visible(c.principal, id);
    const notCancellable = (status: string) => AppError.fromReason('not_cancellable', `The generation is ${status} and can no longer be cancelled`);
    if (!RUNNING.has(g.status)) throw notCancellable(g.status);
    const outcome = await this.ctx.generations.finish(id, { status: 'cancelled' });
    if (!outcome.applied) throw notCancellable((await this.load(id)).status);
    // A cancelled generation keeps no output: whatever the worker stored before the cancel won goes now, and
    // what it stores after is removed by the worker when its settlement finds the generation cancelled.
    await this.ctx.files.discardUnkept(id);

    const queue = (g.routing as { queue?: QueueName } | null)?.queue ?? (g.requestType === 'image' ? QUEUES.image : QUEUES.media);
    const job = await this.ctx.queues[queue].getJob(id).catch(() => undefined);
    if (job) {
      const state = await job.getState().catch(() => 'unknown');
      const data = job.data as MediaJobData;
      // A job holding an upstream task runs once more at once, to cancel the task; one that never started is dropped.
      if (state === 'delayed' && data.step) await job.promote().catch(() => undefined);
      else if (state === 'waiting' || state === 'prioritized' || state === 'delayed') await job.remove().catch(() => undefined);
      await new GenerationPublisher(this.ctx.redis, data.replyTo, id).send({ type: 'cancelled' });
    }
    if (g.callBackUrl) await this.callbacks.enqueue({ generationId: id, organizationId: g.organizationId, url: g.callBackUrl, status: 'cancelled' });
    const after = await this.load(id);
    return { status: 200, body: mediaRecord(after) };
  }

  // ---------- shared ----------

  private submit(s: Submit): Promise<Submission> {
    const p = s.c.principal;
    const owner = ownerOf(p);
    return this.ctx.gateway.submit<MediaJobData>(
      s.queue,
      {
        id: s.id,
        ...owner,
        model: s.model,
        unifiedModelId: s.primary.id,
        modelDisplayName: s.primary.displayName,
        requestType: s.requestType,
        apiType: s.apiType,
        responseMode: s.mode,
        request: s.request,
        warnings: s.warnings.length ? s.warnings : undefined,
        routing: { queue: s.queue, candidates: s.candidates.map((x) => x.slug), ...(s.dropped !== undefined && { dropped: s.dropped }) },
        callBackUrl: s.callBackUrl ?? null,
        sourceGenerationId: s.sourceGenerationId ?? null,
        traceId: s.c.traceId,
        bound: s.bound,
        idempotency: s.c.idempotency,
      },
      () => ({
        ...s.job,
        generationId: s.id,
        ...owner,
        candidates: s.candidates,
        warnings: s.planWarnings,
        replyTo: s.mode === 'async' ? null : this.ctx.gateway.replyChannel,
        traceId: s.c.traceId,
        kind: s.kind,
        callBackUrl: s.callBackUrl ?? null,
      }),
      { listen: s.mode !== 'async' },
    );
  }

  /** Waits up to SYNC_WAIT_MS for the job's final message; null when it did not come (the job goes on). */
  private async wait(sub: Submission): Promise<FinalMessage | null> {
    if (!sub.mailbox) return null;
    try {
      return await this.ctx.gateway.waitFinal(sub, this.ctx.config.syncWaitMs);
    } finally {
      sub.detach();
    }
  }

  /** The media record: at once for async calls, else once the job ends or the wait runs out. */
  private async answer(sub: Submission, async: boolean): Promise<MediaReply> {
    if (!async) await this.wait(sub);
    const g = await this.load(sub.id);
    return { status: RUNNING.has(g.status) ? 202 : 200, body: mediaRecord(g), headers: this.hint(g) };
  }

  private hint(g: Generation): Record<string, string> | undefined {
    return RUNNING.has(g.status) ? { 'Retry-After': String(retryAfterSeconds(g.requestType)) } : undefined;
  }

  private async checkCallback(url: string | undefined, path: string): Promise<string | undefined> {
    if (url === undefined) return undefined;
    try {
      await checkCallbackUrl(url, { allowPrivate: this.ctx.config.callbackAllowPrivate });
    } catch (e) {
      if (e instanceof CallbackUrlError) throw AppError.validation([{ path, message: e.message }], `Invalid callBackUrl: ${e.message}`);
      throw e;
    }
    return url;
  }

  private async load(id: string): Promise<Generation> {
    return this.ctx.files.withFreshUrls(await this.ctx.db.generation.findUniqueOrThrow({ where: { id } }));
  }

  /**
   * A media generation the caller may see: an API key sees its own; a personal-account token the whole
   * organization (owner, admin) or its own (member). Anything else is 404, as if it did not exist.
   */
  private async visible(principal: Principal, id: string): Promise<Generation> {
    const g = await this.ctx.db.generation.findFirst({
      where: {
        id,
        organizationId: principal.organizationId,
        apiType: { in: ['images', 'media'] },
        ...(principal.kind === 'key' ? { apiKeyId: principal.keyId } : principal.role === 'member' ? { userId: principal.userId } : {}),
      },
    });
    if (!g) throw new AppError('NOT_FOUND', `Generation ${id} not found`);
    return this.ctx.files.withFreshUrls(g);
  }
}
