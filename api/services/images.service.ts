import type { Generation } from '../../shared/db/generated/client';
import { newId } from '../../shared/ids';
import { maxBound } from '../../shared/billing/pricing';
import { readAll } from '../../shared/storage/blob-store';
import { AppError, type StoredError } from '../../shared/errors/app-error';
import { boundUnits, imageResult, mediaCost, pendingImageBody, retryAfterSeconds, type MediaResult } from '../../shared/formats/media.mapper';
import type { ImageRequest } from '../../shared/providers/adapter.types';
import { QUEUES } from '../../shared/queue/queue-names';
import { check } from '../../shared/schemas/ajv';
import { imageGenerationIssues, imageGenerationSchema, type ImageGenerationBody } from '../../shared/schemas/images.schema';
import type { MediaJobData } from '../../shared/queue/job-catalog';
import { routed, type Caller, type Submission } from './generation-order';
import type { MediaReply, MediaServiceDeps } from './media-records';

/** Null-valued optional fields count as absent (OpenAI accepts `null` for them, and so do many clients). */
function withoutNulls(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null));
}

/**
 * POST /v2/images/generations (interface.md; decisions.md section 6): validate, route, bound, reserve and enqueue
 * through the gateway, wait up to SYNC_WAIT_MS, and answer the OpenAI image result (or the pending body).
 */
export class ImagesService {
  constructor(private readonly d: MediaServiceDeps) {}

  async generate(c: Caller, raw: unknown): Promise<MediaReply> {
    const { sub, body } = await this.order(c, raw);
    const final = await this.d.records.wait(sub);
    const g = await this.d.records.load(sub.id);
    if (final?.type === 'failed' || g.status === 'failed') throw AppError.fromStored(final?.type === 'failed' ? final.error : (g.error as unknown as StoredError));
    if (g.status === 'cancelled') throw new AppError('CONFLICT', 'The generation was cancelled');
    if (g.status !== 'completed') return { status: 202, body: pendingImageBody(g), headers: { 'Retry-After': String(retryAfterSeconds('image')) } };
    return { status: 200, body: await this.resultOf(g, body) };
  }

  /** Validates, routes, bounds, reserves and enqueues an images request (sync for `generate`; `batch` for a line of a batch). */
  async order(c: Caller, raw: unknown, o: { mode: 'sync' | 'batch'; id?: string } = { mode: 'sync' }): Promise<{ sub: Submission; body: ImageGenerationBody }> {
    const body = check<ImageGenerationBody>(imageGenerationSchema, withoutNulls(raw ?? {}));
    const route = await this.d.planner.plan({ principal: c.principal, model: body.model, provider: body.provider, modelType: 'image' });
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

    const sub = await this.d.gateway.order<MediaJobData>({
      queue: QUEUES.image,
      id: o.id ?? newId('gen'),
      caller: c,
      requestType: 'image',
      apiType: 'images',
      mode: o.mode,
      ...routed(route),
      request: body,
      routingQueue: true,
      recordWarnings: route.plan.warnings,
      bound: maxBound(route.endpoints, (e) => mediaCost(e.price, boundUnits('image', { images: body.n }))),
      job: () => ({ kind: 'image', input: {}, image: { request, responseFormat: body.response_format }, inputUnits: 0, callBackUrl: null }),
    });
    return { sub, body };
  }

  /** The image result of a completed generation, as the synchronous call answers it. */
  async resultOf(g: Generation, body: Pick<ImageGenerationBody, 'response_format'>): Promise<unknown> {
    const base64 = body.response_format === 'b64_json' ? await this.base64Of(g) : undefined;
    return imageResult(await this.d.files.withFreshUrls(g), base64);
  }

  /** The stored images of a generation as base64 (response_format b64_json). */
  private async base64Of(g: Generation): Promise<string[]> {
    const outputs = (g.result as unknown as MediaResult | null)?.outputs ?? [];
    const out: string[] = [];
    for (const o of outputs) {
      const file = await this.d.files.get(g.organizationId, o.fileId);
      const blob = file && (await this.d.files.content(file));
      if (!blob) throw new AppError('INTERNAL_ERROR', 'A generated image is missing from storage');
      out.push((await readAll(blob.body)).toString('base64'));
    }
    return out;
  }
}
