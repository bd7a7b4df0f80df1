/**
 * Canonical media input → Replicate's HTTP API (https://replicate.com/docs/reference/http): a prediction is
 * created at `POST /models/{owner}/{name}/predictions` (or `POST /predictions` with a `version` for
 * `owner/name:version`), read at `GET /predictions/{id}` and cancelled at `POST /predictions/{id}/cancel`.
 * Pure: describes requests, performs none.
 */
import type { MediaInput, MediaTaskRequest } from '../adapter.types';
import { isRecord, unsupported } from '../mapper-utils';
import type { HttpRequestSpec } from '../provider.types';

export function replicateHeaders(apiKey: string): Record<string, string> {
  return { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/json' };
}

type Field = (value: unknown, input: MediaInput) => Record<string, unknown> | undefined;
const rename =
  (to: string): Field =>
  (value) => ({ [to]: value });

/** An image of the public `images` list as a URL Replicate can fetch (base64 data becomes a data: URL). */
function imageUrl(item: unknown): string {
  if (!isRecord(item) || typeof item.data !== 'string') return unsupported('images: each item needs a string `data`');
  if (item.type === 'base64' && !item.data.startsWith('data:')) return `data:image/png;base64,${item.data}`;
  return item.data;
}

/**
 * The parameter table: our public input name → Replicate's common input name(s). Names not in the table are
 * passed through unchanged (model-specific inputs); `callBackUrl` is ours and never sent.
 */
export const REPLICATE_INPUT_FIELDS: ReadonlyMap<string, Field | null> = new Map<string, Field | null>([
  ['prompt', rename('prompt')],
  ['negative_prompt', rename('negative_prompt')],
  ['aspect_ratio', rename('aspect_ratio')],
  [
    'images',
    (value) => {
      const urls = (Array.isArray(value) ? value : []).map(imageUrl);
      if (urls.length === 0) return undefined;
      return urls.length === 1 ? { image: urls[0] } : { image: urls[0], image_input: urls };
    },
  ],
  ['seed', rename('seed')],
  ['watermark', rename('watermark')],
  ['image_resolution', rename('resolution')],
  ['quality', rename('quality')],
  ['output_format', rename('output_format')],
  ['output_compression', rename('output_quality')],
  ['max_images', rename('num_outputs')],
  ['isEnhance', rename('enhance_prompt')],
  ['guidance_scale', rename('guidance')],
  ['strength', rename('prompt_strength')],
  ['enable_safety_checker', (value) => ({ disable_safety_checker: value === false })],
  ['upscale_factor', rename('upscale_factor')],
  ['font_inputs', rename('font_inputs')],
  ['super_resolution_references', rename('super_resolution_references')],
  ['duration', rename('duration')],
  ['video', rename('video')],
  ['image', rename('image')],
  ['target_resolution', rename('target_resolution')],
  ['callBackUrl', null],
]);

export function replicateInput(input: MediaInput): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined) continue;
    const field = REPLICATE_INPUT_FIELDS.get(name);
    if (field === null) continue;
    Object.assign(out, field ? field(value, input) : { [name]: value });
  }
  return out;
}

const MODEL = /^([^/\s:]+)\/([^/\s:]+)(?::([0-9a-zA-Z]+))?$/;

export function buildCreatePrediction(req: MediaTaskRequest, apiKey: string): HttpRequestSpec {
  const m = MODEL.exec(req.model);
  if (!m) return unsupported(`Replicate model must be "owner/name" or "owner/name:version", got "${req.model}"`);
  const input = replicateInput(req.input);
  if (m[3]) return { method: 'POST', path: '/predictions', headers: replicateHeaders(apiKey), body: { version: m[3], input } };
  return { method: 'POST', path: `/models/${encodeURIComponent(m[1])}/${encodeURIComponent(m[2])}/predictions`, headers: replicateHeaders(apiKey), body: { input } };
}

export function buildGetPrediction(id: string, apiKey: string): HttpRequestSpec {
  return { method: 'GET', path: `/predictions/${encodeURIComponent(id)}`, headers: replicateHeaders(apiKey) };
}

export function buildCancelPrediction(id: string, apiKey: string): HttpRequestSpec {
  return { method: 'POST', path: `/predictions/${encodeURIComponent(id)}/cancel`, headers: replicateHeaders(apiKey) };
}
