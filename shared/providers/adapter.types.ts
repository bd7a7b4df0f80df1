/**
 * What every provider adapter (`shared/providers/<kind>/index.ts`) declares: its kind, what it supports, and
 * its pure mappers. Adapters describe HTTP requests (`HttpRequestSpec`); only `api.ts` performs them.
 */
import type { ProviderKind } from '../catalog/catalog.types';
import type {
  EmbeddingRequest,
  EmbeddingResult,
  HttpRequestSpec,
  TextRequest,
  TextResult,
  TextStreamEvent,
  UpstreamFailure,
} from './provider.types';

/** One Server-Sent Event as `sse.ts` parses it. */
export interface SseEvent {
  event?: string;
  data: string;
  id?: string;
}

/**
 * Turns a provider's stream, one SSE event at a time, into canonical events. Stateful but pure: no I/O, no
 * clock. `end()` is called once the upstream body ends; it flushes a pending `finish`, or reports an `error`
 * when the stream stopped before the provider said it had finished.
 * Order promise: `usage` (when the provider reports it) comes right before `finish`, and `finish` comes once.
 */
export interface TextStreamParser {
  push(event: SseEvent): TextStreamEvent[];
  end(): TextStreamEvent[];
}

/** What a provider's error body says, as far as the adapter can tell. */
export interface ErrorBodyInfo {
  message?: string;
  /** The provider's own error type or status (`overloaded_error`, `RESOURCE_EXHAUSTED`), translated by a table. */
  reason?: UpstreamFailure['reason'];
}
export type ErrorBodyExtractor = (body: unknown) => ErrorBodyInfo;

export interface TextMappingOptions {
  /** Used when the request has no `maxOutputTokens` and the provider requires one (Anthropic). Default DEFAULT_MAX_OUTPUT_TOKENS (provider.types.ts). */
  defaultMaxOutputTokens?: number;
}

// ---------- images (OpenAI `/images/generations`) ----------

export interface ImageRequest {
  model: string;
  prompt: string;
  n?: number;
  size?: string;
  quality?: string;
  style?: string;
  background?: 'transparent' | 'opaque' | 'auto';
  outputFormat?: 'png' | 'jpeg' | 'webp';
  outputCompression?: number;
  /** Only dall-e models take it; gpt-image models always answer base64. */
  responseFormat?: 'url' | 'b64_json';
  user?: string;
}

export interface GeneratedImage {
  b64?: string;
  url?: string;
  revisedPrompt?: string;
}

export interface ImageResult {
  images: GeneratedImage[];
  /** gpt-image models report tokens; dall-e models report none. */
  usage?: { inputTokens: number; outputTokens: number; imageInputTokens?: number; textInputTokens?: number };
  outputFormat?: string;
  size?: string;
  quality?: string;
  background?: string;
}

// ---------- asynchronous media tasks (Replicate-style predictions) ----------

/**
 * Canonical media input: the public `input` names of POST /v1/media (`prompt`, `aspect_ratio`, `images`,
 * `seed`, `max_images`, ...) plus what operations add (`video`, `image`, `target_resolution`, `duration`).
 * Each adapter translates the names it knows and passes other fields through unchanged.
 */
export type MediaInput = Record<string, unknown>;

export interface MediaTaskRequest {
  /** The provider's model (`owner/name`, or `owner/name:version`). */
  model: string;
  input: MediaInput;
}

/** Our task states; adapters translate theirs with a table. */
export type MediaTaskStatus = 'pending' | 'processing' | 'succeeded' | 'failed' | 'cancelled';

export interface MediaTask {
  id: string;
  status: MediaTaskStatus;
  /** Output file URLs (empty until succeeded). */
  outputs: string[];
  /** Text output, when the model answers text. */
  text?: string;
  error?: string;
  /** What the provider measured, when it says. */
  metrics: { durationSeconds?: number; imageCount?: number; predictSeconds?: number; inputTokens?: number; outputTokens?: number };
}

/** Create, poll and cancel one asynchronous task. */
export interface MediaTaskOperation {
  buildCreate(req: MediaTaskRequest, apiKey: string): HttpRequestSpec;
  buildGet(taskId: string, apiKey: string): HttpRequestSpec;
  buildCancel(taskId: string, apiKey: string): HttpRequestSpec;
  /** Reads a task from the create, get or cancel reply. */
  parseTask(json: unknown): MediaTask;
}

// ---------- the manifest ----------

export interface AdapterSupports {
  text: boolean;
  textStream: boolean;
  embeddings: boolean;
  images: boolean;
  logprobs: boolean;
  /** `textFormat` json_schema / json_object is honoured upstream. */
  structuredOutput: boolean;
  /** Asynchronous media tasks (`media` operation). */
  media?: boolean;
  /** Embeddings input as token-id arrays (the provider tokenizes with the model's own tokenizer). */
  embeddingTokens?: boolean;
}

export interface TextOperation {
  /** Honours `req.stream`: a streaming request gets the provider's streaming path/flags. */
  buildRequest(req: TextRequest, apiKey: string, options?: TextMappingOptions): HttpRequestSpec;
  parseResponse(json: unknown): TextResult;
  createStreamParser(): TextStreamParser;
}

export interface EmbeddingsOperation {
  buildRequest(req: EmbeddingRequest, apiKey: string): HttpRequestSpec;
  parseResponse(json: unknown, req: EmbeddingRequest): EmbeddingResult;
}

export interface ImagesOperation {
  buildRequest(req: ImageRequest, apiKey: string): HttpRequestSpec;
  parseResponse(json: unknown): ImageResult;
}

export interface ProviderAdapter<K extends ProviderKind = ProviderKind> {
  kind: K;
  supports: AdapterSupports;
  /** Reads the provider's error body (non-2xx replies and in-stream error events). */
  extractError: ErrorBodyExtractor;
  text?: TextOperation;
  embeddings?: EmbeddingsOperation;
  images?: ImagesOperation;
  media?: MediaTaskOperation;
}
