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
  TokenizerFamily,
  TokenUsage,
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
  /**
   * What the provider has reported of the usage so far, field by field, before its final `usage` (Anthropic's input at
   * `message_start`, Gemini's cumulative counts on each chunk): what a stream cut before its end is charged for.
   */
  usageSoFar?(): Partial<TokenUsage> | undefined;
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
  /**
   * How long the call may take (the provider's `timeoutMs`); absent for provider batch lines, which have no such limit.
   * A provider that needs a limit sizes a non-streaming call's default to finish within it (Anthropic).
   */
  timeoutMs?: number;
  /** The endpoint speaks OpenAI's Responses API (catalog `responsesApi`): text goes to `POST /responses` (openai adapter). */
  responsesApi?: boolean;
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

// ---------- provider batch APIs (OpenAI Batch, Anthropic Message Batches) ----------

/**
 * One line handed to a provider's batch API: our id for it (the generation's id, the provider's `custom_id`) and the
 * request the adapter's `text` or `embeddings` `buildRequest` describes for the same call (stream off).
 */
export interface UpstreamBatchLine {
  customId: string;
  request: HttpRequestSpec;
}

/** A provider batch, in our words. */
export interface UpstreamBatch {
  id: string;
  /**
   * `running`: the provider still works on it (validating, in progress, finalizing, cancelling).
   * `ended`: its results can be read (completed, cancelled or expired: each line that ran has a result, the others a
   * retryable failure). `failed`: the provider refused the whole batch (no line ran; every line may be retried).
   */
  status: 'running' | 'ended' | 'failed';
  /** Once `ended`: the GETs whose `text` replies hold the result lines (OpenAI: output and error files; Anthropic: results). */
  results: HttpRequestSpec[];
  /** Why it `failed`, as the provider says. */
  error?: string;
}

/** One result line: the line's reply body exactly as the synchronous call answers it, or why it has none. */
export type UpstreamBatchResult =
  | { customId: string; ok: true; body: unknown }
  | {
      customId: string;
      ok: false;
      /** The provider's status for the line (400, 429, 500...), when it gave one. */
      status?: number;
      message: string;
      /** Whether the line may be tried again on another path (5xx, 429, cancelled, expired: yes; 4xx: no). */
      retryable: boolean;
    };

/** A batch on a page of the provider's list, in our words; `raw` is read with `parseBatch` once it is taken. */
export interface ListedBatch {
  id: string;
  /** When the provider created it (ms), when the list says. */
  createdMs?: number;
  /** How many requests it holds, when the list says. */
  requests?: number;
  /** Our tag, where the provider keeps one (`buildCreate`'s `tag`). */
  tag?: string;
  raw: unknown;
}

/**
 * What a chunk's run knows of the batch an earlier run may have created and never recorded (docs/batches.md
 * "Crashes"), and what it must not take.
 */
export interface SoughtBatch {
  /** The chunk's id: the create's `tag`. */
  tag: string;
  /** When the create could have been accepted (ms, clock skew included): from a little before the chunk went `submitting` to now. */
  sinceMs: number;
  untilMs: number;
  /** How many requests it could hold: the chunk's lines still running now at least, the chunk's lines at most. */
  minLines: number;
  maxLines: number;
  /** Which of the listed batches chunks have recorded (their `upstream_id`): another chunk's, never taken. */
  known: ReadonlySet<string>;
  /** Other chunks whose create may be on its way (rows `submitting`): a batch that fits them too is not told apart. */
  others: ReadonlyArray<{ sinceMs: number; maxLines: number }>;
  /** Whether the pages listed reach back past `sinceMs` (else a batch seen once may have a twin further back). */
  complete: boolean;
}

/** The batch taken (`batch`), or none; `candidates`: the batches that fit but could not be told apart (none taken). */
export interface BatchMatch {
  batch?: ListedBatch;
  candidates: string[];
}

/**
 * A provider's own batch API: create a batch of lines, read its state, cancel it, read its results. Pure: each
 * method describes a request or reads a reply; `api.ts` performs them.
 */
export interface BatchApiOperation {
  /** The operations whose requests its batch API takes. */
  operations: Array<'text' | 'embeddings'>;
  /** OpenAI: the JSONL upload of the lines (`POST /files`, `purpose=batch`); absent where a create carries the lines. */
  buildUpload?(lines: UpstreamBatchLine[], apiKey: string): HttpRequestSpec;
  /** The uploaded file's id, from `buildUpload`'s reply. */
  parseUpload?(json: unknown): string;
  /**
   * Creates the batch: from the uploaded file (OpenAI; `fileId` set) or from the lines themselves (Anthropic). `tag`
   * (our id for the batch) goes where the provider keeps it with the batch (OpenAI `metadata`), for `find`.
   */
  buildCreate(input: { lines: UpstreamBatchLine[]; fileId?: string; tag?: string }, apiKey: string): HttpRequestSpec;
  /**
   * Where the provider lists its batches, newest first (OpenAI `GET /batches`, Anthropic `GET /messages/batches`), so
   * a run that cannot tell whether an earlier run's create was accepted finds that batch instead of creating a second
   * one: `build` a page of the list (`after`: the `next` of the page before), `parse` it, and `match` what the pages
   * listed so far against what the run knows of its batch.
   */
  find?: {
    build(after: string | undefined, apiKey: string): HttpRequestSpec;
    parse(json: unknown): { batches: ListedBatch[]; next?: string };
    match(listed: readonly ListedBatch[], sought: SoughtBatch): BatchMatch;
  };
  buildGet(batchId: string, apiKey: string): HttpRequestSpec;
  buildCancel(batchId: string, apiKey: string): HttpRequestSpec;
  /** Reads a batch from the create, get or cancel reply; `results` are built with `apiKey`. */
  parseBatch(json: unknown, apiKey: string): UpstreamBatch;
  /** Reads one line of a results reply (blank lines are skipped by the caller). */
  parseResultLine(line: string): UpstreamBatchResult;
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
  /** Whose tokenizer counts a stream the provider cut before its usage (shared/billing/pricing.ts `tokenWeight`). */
  tokenizer: TokenizerFamily;
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
  /** The provider's own batch API, where it has one. */
  batch?: BatchApiOperation;
}
