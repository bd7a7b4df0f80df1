import { newId } from '../../shared/ids';
import { maxBound } from '../../shared/billing/pricing';
import type { EndpointConfig, ModelConfig } from '../../shared/catalog/catalog.types';
import { AppError } from '../../shared/errors/app-error';
import { boundSeconds, boundUnits, mediaCost, mediaRecord } from '../../shared/formats/media.mapper';
import type { MediaInput } from '../../shared/providers/adapter.types';
import { QUEUES, type QueueName } from '../../shared/queue/queue-names';
import { check } from '../../shared/schemas/ajv';
import { mediaCreateSchema, type MediaCreateBody } from '../../shared/schemas/media.schema';
import { queueOfGeneration, type MediaJobData, type MediaKind } from '../../shared/queue/job-catalog';
import type { CallbackService } from '../../shared/services/callbacks.service';
import { routed, type Caller } from './generation-order';
import { RUNNING } from '../../shared/services/generation.service';
import type { MediaReply, MediaServiceDeps } from './media-records';

const MEDIA_TYPES: ModelConfig['type'][] = ['image', 'video', 'audio', 'upscale'];
/** Input fields every media model takes (never reported as unsupported). */
const ALWAYS_HONOURED = new Set(['prompt', 'callBackUrl']);

export interface MediaDeps extends MediaServiceDeps {
  callbacks: CallbackService;
}

/**
 * General media generations (interface.md "POST /v1/media", "GET /v1/media/{id}"; decisions.md sections 4 and 5
 * for cancel): validate, route, bound, reserve and enqueue through the gateway, then wait up to SYNC_WAIT_MS.
 * Operations on a finished generation are media-operations.service.ts.
 */
export class MediaService {
  constructor(private readonly d: MediaDeps) {}

  // ---------- POST /v1/media ----------

  async create(c: Caller, raw: unknown): Promise<MediaReply> {
    const body = check<MediaCreateBody>(mediaCreateSchema, raw ?? {});
    const requested = Object.keys(body.input).filter((k) => !ALWAYS_HONOURED.has(k) && body.input[k] !== undefined);
    const route = await this.d.planner.plan({ principal: c.principal, model: body.model, provider: body.provider, modelType: MEDIA_TYPES, requestedParameters: requested });
    const kind = route.primary.type as MediaKind;
    if (kind !== 'upscale' && !body.input.prompt) throw AppError.validation([{ path: '/input/prompt', message: `is required for ${kind} models` }]);
    if (kind === 'upscale' && !body.input.images?.length) throw AppError.validation([{ path: '/input/images', message: 'an upscale model needs at least one image' }]);
    const caps = route.endpoints.map((e) => e.maxImages).filter((m): m is number => m !== undefined);
    if (body.input.max_images !== undefined && caps.length && body.input.max_images > Math.min(...caps)) {
      throw AppError.validation([{ path: '/input/max_images', message: `must be at most ${Math.min(...caps)} for ${route.primary.id}` }]);
    }
    const callBackUrl = await this.d.records.checkCallback(body.input.callBackUrl, '/input/callBackUrl');

    const input: MediaInput = { ...body.input };
    delete input.callBackUrl;
    const seconds = kind === 'video' || kind === 'audio' ? body.input.duration : undefined;
    // Per endpoint: a video reserves the endpoint's longest output when the catalog names it (maxDurationSeconds).
    const units = (e: EndpointConfig) => boundUnits(kind, { images: body.input.max_images ?? 1, seconds: boundSeconds(e, seconds), prompt: body.input.prompt });
    const first = route.candidates[0];
    const sub = await this.d.gateway.order<MediaJobData>({
      queue: kind === 'image' ? QUEUES.image : QUEUES.media,
      id: newId('gen'),
      caller: c,
      requestType: kind,
      apiType: 'media',
      mode: body.async ? 'async' : 'sync',
      ...routed(route),
      request: body,
      routingQueue: true,
      recordWarnings: [...route.plan.warnings, ...(route.plan.warningsByEndpoint[first.slug] ?? [])],
      bound: maxBound(route.endpoints, (e) => mediaCost(e.price, units(e))),
      callBackUrl,
      job: () => ({ kind, input, inputUnits: body.input.images?.length ?? 0, ...(kind === 'video' || kind === 'audio' ? { expectedSeconds: body.input.duration } : {}), callBackUrl: callBackUrl ?? null }),
    });
    return this.d.records.answer(sub, body.async);
  }

  // ---------- GET /v1/media/{id} ----------

  async get(c: Caller, id: string): Promise<MediaReply> {
    const g = await this.d.records.visible(c.principal, id);
    return { status: 200, body: mediaRecord(g), headers: this.d.records.hint(g) };
  }

  // ---------- POST /v1/media/{id}/cancel ----------

  async cancel(c: Caller, id: string): Promise<MediaReply> {
    const g = await this.d.records.visible(c.principal, id);
    const notCancellable = (status: string) => AppError.fromReason('not_cancellable', `The generation is ${status} and can no longer be cancelled`);
    if (!RUNNING.has(g.status)) throw notCancellable(g.status);
    const queue = queueOfGeneration(g);
    if (!(await this.d.gateway.cancel(id, queue))) throw notCancellable((await this.d.records.load(id)).status);
    // First after the commit, so that nothing failing after it loses the callback (a job still running queues it
    // again when it finds the cancel, deduped).
    if (g.callBackUrl) await this.d.callbacks.enqueue({ generationId: id, organizationId: g.organizationId, url: g.callBackUrl, status: 'cancelled' });
    // A cancelled generation keeps no output: whatever the worker stored before the cancel won goes now, and
    // what it stores after is removed by the worker when its settlement finds the generation cancelled.
    await this.d.files.discardUnkept(id);
    const after = await this.d.records.load(id);
    return { status: 200, body: mediaRecord(after) };
  }
}
