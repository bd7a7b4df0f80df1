/**
 * POST /v1/media and POST /v1/media/{id}/operations bodies (interface.md "POST /v1/media",
 * "POST /v1/media/{id}/operations"), and the payload of media and image jobs (queues `image` and `media`).
 *
 * `input` fields are typed as the interface implies; fields it does not list are accepted and passed to the
 * provider as model-specific inputs. Whether the chosen model honours a field is decided by its catalog
 * `supports` list: a field it does not support is dropped with a warning (or, with
 * `provider.require_parameters`, the endpoint is excluded).
 */
import { MEDIA_OPERATIONS } from '../catalog/catalog.types';
import type { ImageRequest, MediaInput } from '../providers/adapter.types';
import type { GenerationJobBase } from '../queue/job-catalog';
import { routingSchema, type ProviderRouting } from './routing.schema';

export const MEDIA_PROMPT_MAX = 32000;
export const EXTEND_DURATION = { min: 3, max: 10 } as const;

const url = { type: 'string', minLength: 1, maxLength: 8192, pattern: '^(https?://|data:)' } as const;

export const mediaInputSchema = {
  type: 'object',
  properties: {
    prompt: { type: 'string', minLength: 1, maxLength: MEDIA_PROMPT_MAX },
    negative_prompt: { type: 'string', maxLength: MEDIA_PROMPT_MAX },
    aspect_ratio: { type: 'string', minLength: 1, maxLength: 32 },
    images: {
      type: 'array',
      maxItems: 16,
      items: {
        type: 'object',
        required: ['type', 'data'],
        additionalProperties: false,
        properties: { type: { enum: ['url', 'base64'] }, data: { type: 'string', minLength: 1 } },
        if: { properties: { type: { const: 'url' } } },
        then: { properties: { data: url } },
      },
    },
    callBackUrl: { type: 'string', minLength: 1, maxLength: 2048 },
    seed: { type: 'integer', minimum: 0, maximum: 4294967295 },
    watermark: { type: 'string', maxLength: 512 },
    image_resolution: { type: 'string', maxLength: 32 },
    quality: { type: 'string', maxLength: 32 },
    output_format: { type: 'string', maxLength: 16 },
    max_images: { type: 'integer', minimum: 1, maximum: 10 },
    isEnhance: { type: 'boolean' },
    guidance_scale: { type: 'number', minimum: 0, maximum: 100 },
    strength: { type: 'number', minimum: 0, maximum: 1 },
    enable_safety_checker: { type: 'boolean' },
    upscale_factor: { type: 'string', maxLength: 16 },
    font_inputs: {
      type: 'array',
      maxItems: 16,
      items: {
        type: 'object',
        required: ['font_url', 'text'],
        additionalProperties: false,
        properties: { font_url: url, text: { type: 'string', maxLength: 4000 } },
      },
    },
    super_resolution_references: { type: 'array', maxItems: 16, items: url },
    /** Our extension: requested length of a video or audio result, seconds. */
    duration: { type: 'number', exclusiveMinimum: 0, maximum: 600 },
  },
} as const;

export const mediaCreateSchema = {
  $id: 'MediaGenerationRequest',
  type: 'object',
  additionalProperties: false,
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 512 },
    input: mediaInputSchema,
    provider: routingSchema,
    async: { type: 'boolean', default: false },
    user: { type: 'string', maxLength: 512 },
  },
} as const;

export interface MediaCreateBody {
  model: string;
  input: MediaInput & { prompt?: string; callBackUrl?: string; images?: Array<{ type: 'url' | 'base64'; data: string }>; max_images?: number; duration?: number };
  provider?: ProviderRouting;
  async: boolean;
  user?: string;
}

const callBackUrl = { type: 'string', minLength: 1, maxLength: 2048 } as const;

export const extendParamsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['prompt'],
  properties: {
    prompt: { type: 'string', minLength: 1, maxLength: MEDIA_PROMPT_MAX },
    seeds: { type: 'integer', minimum: 0, maximum: 4294967295 },
    duration: { type: 'number', minimum: EXTEND_DURATION.min, maximum: EXTEND_DURATION.max },
    callBackUrl,
  },
} as const;

export const upscaleParamsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { callBackUrl },
} as const;

export const mediaOperationSchema = {
  $id: 'MediaOperationRequest',
  type: 'object',
  additionalProperties: false,
  required: ['operation'],
  properties: {
    operation: { enum: [...MEDIA_OPERATIONS] },
    params: { type: 'object' },
    async: { type: 'boolean', default: false },
  },
  allOf: [
    { if: { required: ['operation'], properties: { operation: { const: 'extend' } } }, then: { required: ['params'], properties: { params: extendParamsSchema } } },
    { if: { required: ['operation'], properties: { operation: { enum: ['upscale_1080p', 'upscale_4k'] } } }, then: { properties: { params: upscaleParamsSchema } } },
  ],
} as const;

export interface MediaOperationBody {
  operation: (typeof MEDIA_OPERATIONS)[number];
  params?: { prompt?: string; seeds?: number; duration?: number; callBackUrl?: string };
  async: boolean;
}

// ---------- job payloads (queues `image` and `media`) ----------

/** What a generation produces: decides the job's queue, the shape of `data` and the polling hint. */
export type MediaKind = 'image' | 'video' | 'audio' | 'upscale';

export interface MediaAttempt {
  provider: string;
  endpoint: string;
  reason: string;
  status?: number;
  message: string;
}

/** A file already stored for this generation (a resumed job does not store it twice). */
export interface SavedOutput {
  source: string;
  fileId: string;
  url: string;
  mimeType: string;
  size: number;
  /** Playing time read from the file's own headers (video and audio), when they say. */
  durationSeconds?: number;
}

/** Where a step job is: saved with `job.updateData`, so a retry resumes without a second upstream task. */
export interface MediaStep {
  phase: 'polling';
  /** Index of the candidate whose task runs. */
  candidate: number;
  taskId: string;
  polls: number;
  /** Consecutive failed polls (reset by a good one). */
  pollErrors: number;
  /** When the task was created (ms since epoch). */
  createdAt: number;
  attempts: MediaAttempt[];
  saved: SavedOutput[];
}

export interface MediaJobData extends GenerationJobBase {
  kind: MediaKind;
  /** Canonical media input for task adapters (Replicate); fields an endpoint does not support are in its `dropParams`. */
  input: MediaInput;
  /** For endpoints with an images operation (OpenAI): the image request, and whether the caller wants base64 back. */
  image?: { request: Omit<ImageRequest, 'model'>; responseFormat: 'url' | 'b64_json' };
  /** Input files or sources the request carries (usage `input_units`). */
  inputUnits: number;
  /** Seconds billed when the provider does not report a duration (video and audio). */
  expectedSeconds?: number;
  /** An upscale whose source is an image (billed per image, not per second). */
  sourceIsImage?: boolean;
  callBackUrl?: string | null;
  step?: MediaStep;
}

/** A callback delivery (queue `callbacks`). */
export interface CallbackJobData {
  generationId: string;
  organizationId: string;
  url: string;
  status: 'completed' | 'failed' | 'cancelled';
}
