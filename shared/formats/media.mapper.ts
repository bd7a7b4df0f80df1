/**
 * Generation records → the public media shapes (interface.md "Media generation record", "Image generation
 * result"; decisions.md section 5 for `data` of video and audio), the units a media generation is billed by,
 * and the image request as a media-task input. Pure: no I/O.
 */
import type { Price } from '../catalog/catalog.types';
import { Decimal, money } from '../money';
import type { ImageRequest, MediaInput } from '../providers/adapter.types';
import { moneyJson } from './format-utils';

/** What a media generation makes (its job's `kind`). */
export type MediaKind = 'image' | 'video' | 'audio' | 'upscale';

export type MediaStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'cancelled';

/** One stored result file. */
export interface MediaOutput {
  url: string;
  fileId: string;
  mimeType: string;
  durationSeconds?: number;
  revisedPrompt?: string;
}

/** `usage` as stored on the generation (public names; the cost is added from the settled amount). */
export interface MediaUsage {
  input_units: number;
  output_units: number;
  duration_seconds?: number;
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
}

/** What a completed media generation keeps in its `result` column (no `data` when the model answered text only). */
export interface MediaResult {
  data?: MediaData;
  outputs: MediaOutput[];
  provider: string;
  endpoint: string;
  taskId?: string;
  content?: string;
}

export interface MediaItem {
  url: string;
  mime_type: string;
  file_id: string;
  duration_seconds?: number;
}
export type MediaData = MediaItem & { items?: MediaItem[] };

/** The columns of a generation the public shapes are made of. */
export interface MediaGenerationView {
  id: string;
  status: MediaStatus;
  model: string;
  requestType: string;
  createdAt: Date;
  completedAt: Date | null;
  result: unknown;
  usage: unknown;
  error: unknown;
  warnings: unknown;
  clientCost: { toString(): string };
}

export interface MediaRecord {
  id: string;
  object: 'media.generation';
  status: MediaStatus;
  created: number;
  model: string;
  completed_at?: number;
  data?: MediaData;
  usage?: MediaUsage & { cost_rub: number; cost: number };
  error?: { code: string; message: string; metadata?: { reason?: string; raw?: string; provider_name?: string } };
  content?: string;
  warnings?: string[];
  /** While not finished: the id to poll (equal to `id`). */
  taskId?: string;
}

const unix = (d: Date): number => Math.floor(d.getTime() / 1000);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `data` of a result: the first file's fields, and `items` with every file when there are several. */
export function mediaData(outputs: readonly MediaOutput[]): MediaData {
  const items = outputs.map((o): MediaItem => ({
    url: o.url,
    mime_type: o.mimeType,
    file_id: o.fileId,
    ...(o.durationSeconds !== undefined && { duration_seconds: o.durationSeconds }),
  }));
  return items.length > 1 ? { ...items[0], items } : { ...items[0] };
}

/** Stored JSON comes back with its keys reordered (jsonb): replies list them in the documented order. */
function orderedItem(i: MediaItem): MediaItem {
  return { url: i.url, mime_type: i.mime_type, file_id: i.file_id, ...(i.duration_seconds !== undefined && { duration_seconds: i.duration_seconds }) };
}
function orderedData(d: MediaData): MediaData {
  return { ...orderedItem(d), ...(d.items && { items: d.items.map(orderedItem) }) };
}

const USAGE_FIELDS = ['input_units', 'output_units', 'duration_seconds', 'input_tokens', 'output_tokens', 'total_tokens'] as const;

/** Stored usage plus the settled cost (`cost_rub` and `cost`, RUB, 6 places). */
function publicUsage(stored: unknown, clientCost: { toString(): string }): NonNullable<MediaRecord['usage']> {
  const u = isRecord(stored) ? stored : {};
  const out: Record<string, number> = { input_units: 0, output_units: 0 };
  for (const f of USAGE_FIELDS) if (typeof u[f] === 'number') out[f] = u[f];
  const cost = moneyJson(clientCost.toString());
  return { ...(out as unknown as MediaUsage), cost_rub: cost, cost };
}

/** Public error of a failed generation: `code`, `message`, `metadata.raw`/`provider_name`/`reason`; never a trace id. */
function publicError(error: unknown): MediaRecord['error'] {
  const e = isRecord(error) ? error : {};
  const meta = isRecord(e.metadata) ? e.metadata : {};
  const metadata: NonNullable<MediaRecord['error']>['metadata'] = {};
  if (typeof meta.reason === 'string') metadata.reason = meta.reason;
  if (typeof meta.raw === 'string') metadata.raw = meta.raw;
  if (typeof meta.provider_name === 'string') metadata.provider_name = meta.provider_name;
  return {
    code: typeof e.code === 'string' ? e.code : 'BAD_GATEWAY',
    message: typeof e.message === 'string' ? e.message : 'The generation failed',
    ...(Object.keys(metadata).length > 0 && { metadata }),
  };
}

/**
 * The media generation record. `status` may be overridden: an operation on a source that is still being
 * prepared answers the source record as `processing` (interface.md rule 4).
 */
export function mediaRecord(g: MediaGenerationView, opts: { status?: MediaStatus } = {}): MediaRecord {
  const status = opts.status ?? g.status;
  const record: MediaRecord = { id: g.id, object: 'media.generation', status, created: unix(g.createdAt), model: g.model };
  const finished = status === 'completed' || status === 'failed' || status === 'cancelled';
  if (finished && g.completedAt) record.completed_at = unix(g.completedAt);
  const result = isRecord(g.result) ? (g.result as Partial<MediaResult>) : undefined;
  if (status === 'completed') {
    if (result?.data) record.data = orderedData(result.data);
    if (typeof result?.content === 'string') record.content = result.content;
    record.usage = publicUsage(g.usage, g.clientCost);
  }
  if (status === 'failed') record.error = publicError(g.error);
  if (Array.isArray(g.warnings) && g.warnings.length > 0) record.warnings = g.warnings.filter((w): w is string => typeof w === 'string');
  if (!finished) record.taskId = g.id;
  return record;
}

/** The body of an image request that did not finish in time (interface.md; decisions.md section 5). */
export function pendingImageBody(g: Pick<MediaGenerationView, 'id' | 'model' | 'createdAt'>) {
  return { id: g.id, status: 'pending' as const, model: g.model, created: unix(g.createdAt), taskId: g.id };
}

export interface ImageGenerationResult {
  created: number;
  data: Array<{ url?: string; b64_json?: string; revised_prompt?: string }>;
  usage: MediaUsage & { cost_rub: number; cost: number };
}

/**
 * The image generation result of a completed generation. Which of `url` / `b64_json` is filled follows
 * `response_format` (interface.md): `url` (our stored file) by default; with `b64_json` the bytes as base64
 * (`base64`, one per image) and no `url`, as OpenAI answers.
 */
export function imageResult(g: MediaGenerationView, base64?: readonly string[]): ImageGenerationResult {
  const record = mediaRecord(g);
  const result = isRecord(g.result) ? (g.result as Partial<MediaResult>) : {};
  const outputs = result.outputs ?? [];
  return {
    created: unix(g.createdAt),
    data: outputs.map((o, i) => ({
      ...(base64 ? { b64_json: base64[i] ?? '' } : { url: o.url }),
      ...(o.revisedPrompt !== undefined && { revised_prompt: o.revisedPrompt }),
    })),
    usage: record.usage ?? { input_units: 0, output_units: 0, cost_rub: 0, cost: 0 },
  };
}

/** Polling hint of a generation still running (interface.md: 3 to 5 s images, 5 to 10 s video). */
export function retryAfterSeconds(requestType: string): number {
  return requestType === 'image' ? 3 : 5;
}

// ---------- billing units ----------

/** What a media generation is billed by, in the catalog price names (decisions.md sections 1 and 4). */
export interface MediaUnits {
  /** Images produced (`price.image` each). */
  images?: number;
  /** Seconds of video produced (`price.video_per_second`). */
  videoSeconds?: number;
  /** Characters of text spoken (`price.tts_per_million_characters`). */
  characters?: number;
}

/** `request` + `image` × images + `video_per_second` × seconds + `tts_per_million_characters` × characters / 10⁶. */
export function mediaCost(price: Price, units: MediaUnits): Decimal {
  return money(price.request ?? 0)
    .plus(money(price.image ?? 0).times(units.images ?? 0))
    .plus(money(price.video_per_second ?? 0).times(new Decimal(units.videoSeconds ?? 0)))
    .plus(money(price.tts_per_million_characters ?? 0).times(units.characters ?? 0).dividedBy(1_000_000));
}

/** Seconds reserved for a video whose length is not asked for (the longest `extend` duration). */
export const DEFAULT_VIDEO_SECONDS = 10;

/**
 * Seconds to reserve for a video on one endpoint: its longest output (catalog `maxDurationSeconds`) when it
 * has one, since a provider may run longer than asked, else the requested duration (undefined: not asked).
 */
export function boundSeconds(endpoint: { maxDurationSeconds?: number }, requested: number | undefined): number | undefined {
  if (endpoint.maxDurationSeconds === undefined) return requested;
  return Math.max(endpoint.maxDurationSeconds, requested ?? 0);
}

/** The units a generation of this kind will be billed by at most, from its request. */
export function boundUnits(kind: MediaKind, a: { images?: number; seconds?: number; prompt?: string }): MediaUnits {
  if (kind === 'image') return { images: a.images ?? 1 };
  if (kind === 'video') return { videoSeconds: a.seconds ?? DEFAULT_VIDEO_SECONDS };
  // An upscale turns out a video or an image, whichever its source is: bound both.
  if (kind === 'upscale') return { videoSeconds: a.seconds ?? DEFAULT_VIDEO_SECONDS, images: 1 };
  return { characters: a.prompt?.length ?? 0 };
}

/** The units actually produced: none for a text-only answer (no file), which costs the `request` price alone. */
export function producedUnits(kind: MediaKind, outputs: readonly MediaOutput[], a: { seconds?: number; prompt?: string; sourceIsImage?: boolean }): MediaUnits {
  if (outputs.length === 0) return {};
  if (kind === 'image' || (kind === 'upscale' && a.sourceIsImage)) return { images: outputs.length };
  if (kind === 'video' || kind === 'upscale') return { videoSeconds: a.seconds ?? 0 };
  return { characters: a.prompt?.length ?? 0 };
}

// ---------- image requests as media-task input ----------

/** OpenAI image sizes → the aspect ratios hosted image models take. */
export const ASPECT_RATIO_BY_SIZE: ReadonlyMap<string, string> = new Map([
  ['256x256', '1:1'],
  ['512x512', '1:1'],
  ['1024x1024', '1:1'],
  ['1536x1024', '3:2'],
  ['1024x1536', '2:3'],
  ['1792x1024', '16:9'],
  ['1024x1792', '9:16'],
]);

/** An image request for a model hosted behind a media-task API (Replicate). */
export function imageRequestToMediaInput(req: Omit<ImageRequest, 'model'>): MediaInput {
  const input: MediaInput = { prompt: req.prompt };
  if (req.n !== undefined) input.max_images = req.n;
  const ratio = req.size ? ASPECT_RATIO_BY_SIZE.get(req.size) : undefined;
  if (ratio) input.aspect_ratio = ratio;
  if (req.outputFormat) input.output_format = req.outputFormat;
  if (req.outputCompression !== undefined) input.output_compression = req.outputCompression;
  return input;
}

const MIME_BY_EXTENSION: ReadonlyMap<string, string> = new Map([
  ['png', 'image/png'],
  ['jpg', 'image/jpeg'],
  ['jpeg', 'image/jpeg'],
  ['webp', 'image/webp'],
  ['gif', 'image/gif'],
  ['mp4', 'video/mp4'],
  ['webm', 'video/webm'],
  ['mov', 'video/quicktime'],
  ['mp3', 'audio/mpeg'],
  ['wav', 'audio/wav'],
  ['flac', 'audio/flac'],
  ['ogg', 'audio/ogg'],
  ['m4a', 'audio/mp4'],
  ['aac', 'audio/aac'],
]);

const DEFAULT_MIME: Record<MediaKind, string> = { image: 'image/png', video: 'video/mp4', audio: 'audio/mpeg', upscale: 'video/mp4' };

/** The type of a downloaded result: the reply's media Content-Type, else the URL's extension, else the kind's default. */
export function outputMimeType(kind: MediaKind, url: string, contentType?: string | null): string {
  const declared = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (/^(image|video|audio)\//.test(declared)) return declared;
  let path = url;
  try {
    path = new URL(url).pathname;
  } catch {
    // not absolute: use as is
  }
  const ext = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase();
  return (ext && MIME_BY_EXTENSION.get(ext)) || DEFAULT_MIME[kind];
}

/** MIME type of an image format name (`png`, `jpeg`, `webp`). */
export function imageMimeType(format: string | undefined): string {
  return MIME_BY_EXTENSION.get((format ?? 'png').toLowerCase()) ?? 'image/png';
}
