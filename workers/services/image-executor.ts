import type { ImageRequest } from '../../shared/providers/adapter.types';
import { imageMimeType, type MediaOutput } from '../../shared/formats/media.mapper';
import type { PlannedCandidate } from '../../shared/queue/job-catalog';
import type { MediaJobData } from '../../shared/queue/job-catalog';
import { upstreamError } from '../../shared/providers/upstream-error';
import { ignoredParameterWarnings, ignoredValueWarnings, substitutedValueWarnings } from '../../shared/routing/route-parameters';
import { IMAGE_RULES, nearestImageSize } from '../../shared/schemas/images.schema';
import type { EndpointConfig } from '../../shared/catalog/catalog.types';
import type { WorkerDeps } from '../worker-deps';
import type { OutputStore } from './output-store';
import { upstreamRequest, type EndpointCall } from './attempt-loop';

const IMAGE_FORMATS = new Set(['png', 'jpeg', 'webp']);
const QUALITIES = new Set(['auto', 'low', 'medium', 'high', 'standard', 'hd']);
/** The media input fields an images request carries; any other one left in the input is ignored (with a warning). */
const CARRIED = new Set(['prompt', 'max_images', 'output_format', 'quality']);

/**
 * An image request and what of the caller's it could not carry: whole fields, values outside a field's set, and
 * values sent as the nearest the endpoint offers.
 */
export interface ImageRequestFor {
  request: ImageRequest;
  ignoredParameters: string[];
  ignoredValues: Array<[parameter: string, value: unknown]>;
  substituted: Array<[parameter: string, value: unknown, used: unknown]>;
}

/**
 * The image request for one endpoint: the /images/generations request as the caller gave it, or (POST
 * /v1/media with an image model) the media input mapped onto it, minus what the endpoint does not support.
 */
export function imageRequestFor(data: MediaJobData, candidate: PlannedCandidate, endpoint: Pick<EndpointConfig, 'upstreamModel' | 'legacy'>): ImageRequestFor {
  const upstreamModel = endpoint.upstreamModel;
  if (data.image) {
    const request: ImageRequest = { ...data.image.request, model: upstreamModel };
    const offered: readonly string[] = (endpoint.legacy ? IMAGE_RULES.legacy : IMAGE_RULES.newer).sizes;
    if (request.size === undefined || offered.includes(request.size)) return { request, ignoredParameters: [], ignoredValues: [], substituted: [] };
    const used = nearestImageSize(request.size, offered);
    const substituted: ImageRequestFor['substituted'] = [['size', request.size, used]];
    return { request: { ...request, size: used }, ignoredParameters: [], ignoredValues: [], substituted };
  }
  const drop = new Set(candidate.dropParams);
  const input = Object.fromEntries(Object.entries(data.input).filter(([k, v]) => !drop.has(k) && v !== undefined));
  const req: ImageRequest = { model: upstreamModel, prompt: String(input.prompt ?? '') };
  const ignoredValues: ImageRequestFor['ignoredValues'] = [];
  if (typeof input.max_images === 'number') req.n = input.max_images;
  if (input.output_format !== undefined) {
    if (typeof input.output_format === 'string' && IMAGE_FORMATS.has(input.output_format)) req.outputFormat = input.output_format as ImageRequest['outputFormat'];
    else ignoredValues.push(['output_format', input.output_format]);
  }
  if (input.quality !== undefined) {
    if (typeof input.quality === 'string' && QUALITIES.has(input.quality)) req.quality = input.quality;
    else ignoredValues.push(['quality', input.quality]);
  }
  return { request: req, ignoredParameters: Object.keys(input).filter((k) => !CARRIED.has(k)), ignoredValues, substituted: [] };
}

export interface ImagesCallResult {
  outputs: MediaOutput[];
  tokens?: { input: number; output: number };
  /** The media input the images request could not carry (interface.md: reported in `warnings`). */
  warnings: string[];
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
    const { request: req, ignoredParameters, ignoredValues, substituted } = imageRequestFor(data, c.candidate, c.resolved.endpoint);
    const reply = await upstreamRequest(this.deps, c, images.buildRequest(req, c.resolved.provider.apiKey ?? ''), signal);
    const result = images.parseResponse(reply.json);
    if (result.images.length === 0) throw upstreamError({ kind: 'malformed', message: 'the images reply holds no image', raw: reply.text.slice(0, 2000) });
    const mime = imageMimeType(result.outputFormat ?? req.outputFormat);
    const outputs: MediaOutput[] = [];
    for (const image of result.images) {
      const saved = image.b64 !== undefined ? await this.store.saveBytes(data, Buffer.from(image.b64, 'base64'), mime) : await this.store.download(data, image.url ?? '', 'image', signal);
      outputs.push({ url: saved.url, fileId: saved.fileId, mimeType: saved.mimeType, ...(image.revisedPrompt !== undefined && { revisedPrompt: image.revisedPrompt }) });
    }
    const [model, provider] = [c.candidate.model, c.resolved.provider.id];
    const warnings = [...ignoredParameterWarnings(ignoredParameters, model, provider), ...ignoredValueWarnings(ignoredValues, model, provider), ...substitutedValueWarnings(substituted, model, provider)];
    return { outputs, warnings, ...(result.usage && { tokens: { input: result.usage.inputTokens, output: result.usage.outputTokens } }) };
  }
}
