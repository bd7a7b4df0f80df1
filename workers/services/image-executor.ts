import type { ImageRequest } from '../../shared/providers/adapter.types';
import { imageMimeType, type MediaOutput } from '../../shared/formats/media.mapper';
import type { PlannedCandidate } from '../../shared/queue/job-catalog';
import type { MediaJobData } from '../../shared/schemas/media.schema';
import { upstreamError } from '../../shared/providers/upstream-error';
import type { WorkerDeps } from '../worker-deps';
import type { OutputStore } from './output-store';
import { upstreamRequest, type EndpointCall } from './attempt-loop';

const IMAGE_FORMATS = new Set(['png', 'jpeg', 'webp']);
const QUALITIES = new Set(['auto', 'low', 'medium', 'high', 'standard', 'hd']);

/**
 * The image request for one endpoint: the /images/generations request as the caller gave it, or (POST
 * /v1/media with an image model) the media input mapped onto it, minus what the endpoint does not support.
 */
export function imageRequestFor(data: MediaJobData, candidate: PlannedCandidate, upstreamModel: string): ImageRequest {
  if (data.image) return { ...data.image.request, model: upstreamModel };
  const drop = new Set(candidate.dropParams);
  const input = Object.fromEntries(Object.entries(data.input).filter(([k]) => !drop.has(k)));
  const req: ImageRequest = { model: upstreamModel, prompt: String(input.prompt ?? '') };
  if (typeof input.max_images === 'number') req.n = input.max_images;
  if (typeof input.output_format === 'string' && IMAGE_FORMATS.has(input.output_format)) req.outputFormat = input.output_format as ImageRequest['outputFormat'];
  if (typeof input.quality === 'string' && QUALITIES.has(input.quality)) req.quality = input.quality;
  return req;
}

export interface ImagesCallResult {
  outputs: MediaOutput[];
  tokens?: { input: number; output: number };
}

/**
 * One synchronous call to an endpoint's `images` operation (OpenAI's /images/generations); every image is
 * stored (base64 replies decoded, URL replies downloaded) and comes back as our own file.
 */
export class ImageExecutor {
  constructor(
    private readonly deps: WorkerDeps,
    private readonly store: OutputStore,
  ) {}

  /** `signal` aborts the upstream call and the downloads (the generation was cancelled). */
  async generate(data: MediaJobData, c: EndpointCall, signal?: AbortSignal): Promise<ImagesCallResult> {
    const images = c.adapter.images!;
    const req = imageRequestFor(data, c.candidate, c.resolved.endpoint.upstreamModel);
    const reply = await upstreamRequest(this.deps, c, images.buildRequest(req, c.resolved.provider.apiKey ?? ''), signal);
    const result = images.parseResponse(reply.json);
    if (result.images.length === 0) throw upstreamError({ kind: 'malformed', message: 'the images reply holds no image', raw: reply.text.slice(0, 2000) });
    const mime = imageMimeType(result.outputFormat ?? req.outputFormat);
    const outputs: MediaOutput[] = [];
    for (const image of result.images) {
      const saved = image.b64 !== undefined ? await this.store.saveBytes(data, Buffer.from(image.b64, 'base64'), mime) : await this.store.download(data, image.url ?? '', 'image', signal);
      outputs.push({ url: saved.url, fileId: saved.fileId, mimeType: saved.mimeType, ...(image.revisedPrompt !== undefined && { revisedPrompt: image.revisedPrompt }) });
    }
    return { outputs, ...(result.usage && { tokens: { input: result.usage.inputTokens, output: result.usage.outputTokens } }) };
  }
}
