/**
 * POST /v2/images/generations (and /v1/images/generations) body: interface.md "POST /v2/images/generations",
 * in OpenAI's images API shape (https://platform.openai.com/docs/api-reference/images/create).
 *
 * The schema holds the bounds every model shares; the rules of a model generation (legacy versus newer:
 * `n`, prompt length, `size`, `quality`, `style`, `output_format`, `background`, `output_compression`) are
 * checked once the model is known (`imageGenerationIssues`), each violation a 400 naming the field.
 */
import type { ValidationIssue } from '../errors/app-error';
import { routingSchema, type ProviderRouting } from './routing.schema';

export const IMAGE_PROMPT_MAX = 32000;
export const LEGACY_IMAGE_PROMPT_MAX = 4000;
export const IMAGE_N_MAX = 10;

export const IMAGE_SIZES = ['auto', '256x256', '512x512', '1024x1024', '1536x1024', '1024x1536', '1792x1024', '1024x1792'] as const;
export const IMAGE_QUALITIES = ['auto', 'low', 'medium', 'high', 'standard', 'hd'] as const;

/**
 * What each model generation accepts (`auto` is the default everywhere and always accepted). Every size of
 * IMAGE_SIZES is accepted for every model (interface.md lists them without a model's qualifier): a size the
 * endpoint's generation does not offer is sent as the nearest one it does (`nearestImageSize`), with a warning.
 */
export const IMAGE_RULES = {
  legacy: {
    sizes: ['auto', '256x256', '512x512', '1024x1024', '1792x1024', '1024x1792'],
    qualities: ['auto', 'standard', 'hd'],
  },
  newer: {
    sizes: ['auto', '1024x1024', '1536x1024', '1024x1536'],
    qualities: ['auto', 'low', 'medium', 'high'],
  },
} as const;

/** The size of `offered` nearest in aspect ratio to `size` (`WxH`), the larger of two as near; `auto` is never chosen. */
export function nearestImageSize(size: string, offered: readonly string[]): string {
  const dims = (s: string) => s.split('x').map(Number) as [number, number];
  const [w, h] = dims(size);
  const distance = (s: string) => Math.abs(Math.log(dims(s)[0] / dims(s)[1]) - Math.log(w / h));
  const area = (s: string) => dims(s)[0] * dims(s)[1];
  return offered.filter((s) => s !== 'auto').reduce((best, s) => (distance(s) < distance(best) - 1e-9 || (Math.abs(distance(s) - distance(best)) <= 1e-9 && area(s) > area(best)) ? s : best));
}

export const imageGenerationSchema = {
  $id: 'ImageGenerationRequest',
  type: 'object',
  additionalProperties: false,
  required: ['model', 'prompt'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 512 },
    prompt: { type: 'string', minLength: 1, maxLength: IMAGE_PROMPT_MAX },
    n: { type: 'integer', minimum: 1, maximum: IMAGE_N_MAX, default: 1 },
    size: { enum: [...IMAGE_SIZES], default: 'auto' },
    quality: { enum: [...IMAGE_QUALITIES], default: 'auto' },
    response_format: { enum: ['url', 'b64_json'], default: 'url' },
    style: { enum: ['vivid', 'natural'] },
    output_format: { enum: ['png', 'jpeg', 'webp'] },
    background: { enum: ['transparent', 'opaque', 'auto'], default: 'auto' },
    output_compression: { type: 'integer', minimum: 0, maximum: 100 },
    moderation: { enum: ['low', 'auto'] },
    user: { type: 'string', maxLength: 512 },
    provider: routingSchema,
  },
} as const;

export interface ImageGenerationBody {
  model: string;
  prompt: string;
  n: number;
  size: (typeof IMAGE_SIZES)[number];
  quality: (typeof IMAGE_QUALITIES)[number];
  response_format: 'url' | 'b64_json';
  style?: 'vivid' | 'natural';
  output_format?: 'png' | 'jpeg' | 'webp';
  background: 'transparent' | 'opaque' | 'auto';
  output_compression?: number;
  moderation?: 'low' | 'auto';
  user?: string;
  provider?: ProviderRouting;
}

/**
 * The rules of the model generation, once the model is known. A value outside what the generation accepts is a 400
 * (never silently dropped), `size` excepted (IMAGE_RULES). `legacy` is the catalog flag of the model's endpoints;
 * `maxImages` the smallest `maxImages` of the endpoints that may serve the request.
 */
export function imageGenerationIssues(body: ImageGenerationBody, model: { legacy: boolean; maxImages?: number; id: string }): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const rules = model.legacy ? IMAGE_RULES.legacy : IMAGE_RULES.newer;
  const which = model.legacy ? `the legacy image model ${model.id}` : `${model.id}`;
  const allowed = (values: readonly string[]) => values.join(', ');
  if (model.legacy) {
    if (body.n !== 1) issues.push({ path: '/n', message: `must be 1 for ${which}` });
    if (body.prompt.length > LEGACY_IMAGE_PROMPT_MAX) issues.push({ path: '/prompt', message: `must NOT have more than ${LEGACY_IMAGE_PROMPT_MAX} characters for ${which}` });
    if (body.output_format !== undefined) issues.push({ path: '/output_format', message: `is not supported by ${which}` });
    if (body.background !== 'auto') issues.push({ path: '/background', message: `is not supported by ${which}` });
    if (body.output_compression !== undefined) issues.push({ path: '/output_compression', message: `is not supported by ${which}` });
    if (body.moderation !== undefined) issues.push({ path: '/moderation', message: `is not supported by ${which}` });
  } else {
    if (body.style !== undefined) issues.push({ path: '/style', message: `is supported by the legacy image model only, not by ${which}` });
    if (model.maxImages !== undefined && body.n > model.maxImages) issues.push({ path: '/n', message: `must be at most ${model.maxImages} for ${which}` });
    if (body.background === 'transparent' && body.output_format === 'jpeg') issues.push({ path: '/background', message: 'transparent needs output_format png or webp' });
  }
  if (!(rules.qualities as readonly string[]).includes(body.quality)) issues.push({ path: '/quality', message: `must be one of ${allowed(rules.qualities)} for ${which}` });
  return issues;
}
