import { newId } from '../../shared/ids';
import { maxBound } from '../../shared/billing/pricing';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import { askedModel } from '../../shared/db/generation-reads';
import type { Catalog, EndpointConfig, ModelConfig } from '../../shared/catalog/catalog.types';
import { assertModelAllowed } from '../../shared/auth/principal';
import { AppError } from '../../shared/errors/app-error';
import { boundSeconds, DEFAULT_VIDEO_SECONDS, mediaCost, mediaRecord, type MediaResult } from '../../shared/formats/media.mapper';
import type { MediaInput } from '../../shared/providers/adapter.types';
import type { PlannedCandidate } from '../../shared/queue/job-catalog';
import { QUEUES } from '../../shared/queue/queue-names';
import { check } from '../../shared/schemas/ajv';
import { mediaOperationSchema, type MediaOperationBody } from '../../shared/schemas/media.schema';
import type { MediaJobData } from '../../shared/queue/job-catalog';
import type { GenerationGateway } from './generation-gateway';
import type { Caller } from './generation-order';
import { RUNNING } from '../../shared/services/generation.service';
import type { MediaRecords, MediaReply } from './media-records';
import type { RoutePlanner } from './route-planner';

export interface MediaOperationsDeps {
  catalog: Catalog;
  planner: RoutePlanner;
  gateway: GenerationGateway;
  records: MediaRecords;
}

/**
 * POST /v1/media/{id}/operations (interface.md): extend a video, or upscale a finished image or video, as a new
 * generation over the source's result file, through the gateway like every other generation.
 */
export class MediaOperationsService {
  constructor(private readonly d: MediaOperationsDeps) {}

  async operate(c: Caller, sourceId: string, raw: unknown): Promise<MediaReply> {
    const body = check<MediaOperationBody>(mediaOperationSchema, raw ?? {});
    const source = await this.d.records.visible(c.principal, sourceId);
    const sourceSlug = source.finalEndpointSlug ?? (source.routing as { candidates?: string[] } | null)?.candidates?.[0];
    const resolved = sourceSlug ? endpointBySlug(this.d.catalog, sourceSlug) : undefined;
    const offered = resolved?.endpoint.operations ?? [];
    if (!offered.includes(body.operation)) {
      throw AppError.validation([{ path: '/operation', message: `${body.operation} is not available for ${askedModel(source)}; it offers ${offered.length ? offered.join(', ') : 'no operations'}` }]);
    }
    // Rule 4: while the source is being prepared the reply is the source itself, `processing`, uncharged.
    if (RUNNING.has(source.status)) return { status: 202, body: mediaRecord(source, { status: 'processing' }), headers: this.d.records.hint(source) };
    if (source.status !== 'completed') throw new AppError('CONFLICT', `The source generation is ${source.status}; only a completed generation can be operated on`);
    const callBackUrl = await this.d.records.checkCallback(body.params?.callBackUrl, '/params/callBackUrl');
    const data = (source.result as unknown as MediaResult | null)?.data;
    if (!data?.url) throw new AppError('CONFLICT', 'The source generation has no result file');
    const sourceIsImage = data.mime_type?.startsWith('image/') ?? false;
    const sourceSeconds = data.duration_seconds;
    const sourceModel = resolved!.model;
    // What runs on the source's model (an extend, an upscale without an upscale model) is a use of it: a key no longer
    // allowed that model may not run it (the upscale model is checked by its plan).
    const upscaler = Object.values(this.d.catalog.models).find((m) => m.type === 'upscale');
    if (body.operation === 'extend' || !upscaler) assertModelAllowed(c.principal, sourceModel.id);
    const common = {
      queue: QUEUES.media,
      id: newId('gen'),
      caller: c,
      apiType: 'media' as const,
      mode: body.async ? ('async' as const) : ('sync' as const),
      routingQueue: true,
      warnings: [],
      callBackUrl,
      sourceGenerationId: source.id,
    };

    if (body.operation === 'extend') {
      const params = body.params!;
      const input: MediaInput = { prompt: params.prompt, video: data.url };
      if (params.seeds !== undefined) input.seed = params.seeds;
      if (params.duration !== undefined) input.duration = params.duration;
      const sub = await this.d.gateway.order<MediaJobData>({
        ...common,
        requestType: 'video',
        // The record names the model that runs it (the source's, its only candidate) from the start, so every
        // ending (completed, failed, cancelled, reaped) shows it; only the async reply shows the literal `pending`.
        primary: sourceModel,
        request: { operation: body.operation, params: body.params, source: source.id },
        candidates: [{ model: sourceModel.id, slug: resolved!.endpoint.slug, dropParams: [] }],
        bound: mediaCost(resolved!.endpoint.price, { videoSeconds: boundSeconds(resolved!.endpoint, params.duration) ?? DEFAULT_VIDEO_SECONDS }),
        job: () => ({ kind: 'video', input, inputUnits: 1, expectedSeconds: params.duration, callBackUrl: callBackUrl ?? null }),
      });
      // interface.md: a just-created asynchronous generation may carry the literal `pending` as its model.
      return this.d.records.answer(sub, body.async, { model: 'pending' });
    }

    // Upscales run on the catalog's upscale model when there is one, else on the source's own endpoint.
    const target = body.operation === 'upscale_4k' ? '4k' : '1080p';
    const input: MediaInput = { [sourceIsImage ? 'image' : 'video']: data.url, target_resolution: target };
    let primary: ModelConfig = sourceModel;
    let endpoints = [resolved!.endpoint];
    let candidates: PlannedCandidate[] = [{ model: sourceModel.id, slug: resolved!.endpoint.slug, dropParams: [] }];
    if (upscaler) {
      const route = await this.d.planner.plan({ principal: c.principal, model: upscaler.id, modelType: 'upscale' });
      ({ primary, endpoints, candidates } = route);
    }
    // An upscaled video is as long as its source; unknown, the upscaler's longest output.
    const units = (e: EndpointConfig) => (sourceIsImage ? { images: 1 } : { videoSeconds: sourceSeconds ?? e.maxDurationSeconds ?? DEFAULT_VIDEO_SECONDS });
    const sub = await this.d.gateway.order<MediaJobData>({
      ...common,
      requestType: sourceIsImage ? 'image' : 'video',
      primary,
      request: { operation: body.operation, params: body.params ?? {}, source: source.id },
      candidates,
      bound: maxBound(endpoints, (e) => mediaCost(e.price, units(e))),
      job: () => ({ kind: 'upscale', input, inputUnits: 1, expectedSeconds: sourceIsImage ? undefined : sourceSeconds, sourceIsImage, callBackUrl: callBackUrl ?? null }),
    });
    return this.d.records.answer(sub, body.async);
  }
}
