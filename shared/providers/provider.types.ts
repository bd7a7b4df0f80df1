/**
 * The canonical shapes between Switchyard and its provider adapters.
 *
 * Public formats (Responses API, chat completions, embeddings) are mapped INTO these by `shared/formats`,
 * and every adapter (`shared/providers/<kind>/`) maps these to and from its provider's wire format.
 * Field names follow OpenAI's Responses API where one exists, because that is our public contract.
 */

/**
 * Output tokens of a text request that names no maximum, on an endpoint that names none either: what its
 * reservation is sized for, how far its stream may run, and what a provider that requires a maximum is sent.
 */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

// ---------- text: request ----------

export type InputContentPart =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; image_url: string; detail?: 'low' | 'high' | 'auto' }
  | { type: 'input_file'; file_data?: string; file_url?: string; filename?: string }
  | { type: 'output_text'; text: string };

export type InputItem =
  | { type: 'message'; role: 'system' | 'developer' | 'user' | 'assistant'; content: InputContentPart[] }
  | { type: 'function_call'; call_id: string; name: string; arguments: string }
  | { type: 'function_call_output'; call_id: string; output: string }
  /**
   * Reasoning of an earlier turn given back (a replayed output item, or a stored answer's encrypted reasoning): its
   * summary, and the reasoning as the provider encrypted it. Only an upstream Responses API takes it.
   */
  | { type: 'reasoning'; summary: Array<{ type: 'summary_text'; text: string }>; encrypted_content?: string };

export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  strict?: boolean;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; name: string };

export type TextFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean; description?: string };

export interface TextRequest {
  /** The provider's own model name (catalog `upstreamModel`). */
  model: string;
  instructions?: string;
  input: InputItem[];
  tools?: FunctionTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  stop?: string[];
  seed?: number;
  reasoning?: { effort?: 'minimal' | 'low' | 'medium' | 'high' | 'max'; summary?: string; maxTokens?: number; enabled?: boolean };
  textFormat?: TextFormat;
  /** Ask for log-probabilities of the output tokens, with this many alternatives per position. */
  topLogprobs?: number;
  logprobs?: boolean;
  stream: boolean;
  /** The deprecated end-user id (`user`). */
  user?: string;
  /** A stable id of the end user for the provider's abuse detection (`safety_identifier`), kept apart from `user`. */
  safetyIdentifier?: string;
  promptCacheKey?: string;
  /** Responses API options only an upstream Responses API can carry (openai adapter, `responsesApi` endpoints). */
  serviceTier?: string;
  verbosity?: 'low' | 'medium' | 'high';
  /** `include` values such as `reasoning.encrypted_content`. */
  include?: string[];
}

// ---------- text: result ----------

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error';

export type OutputItem =
  | { type: 'message'; id: string; role: 'assistant'; content: Array<{ type: 'output_text'; text: string }> }
  | { type: 'function_call'; id: string; call_id: string; name: string; arguments: string }
  | {
      type: 'reasoning';
      id: string;
      summary: Array<{ type: 'summary_text'; text: string }>;
      /** The reasoning itself, encrypted by the provider (OpenAI's Responses API, `include: ["reasoning.encrypted_content"]`). */
      encrypted_content?: string;
    };

/** Whose tokenizer a provider's models use (an OpenAI-compatible provider counts as OpenAI): shared/billing/pricing.ts counts by it. */
export type TokenizerFamily = 'openai' | 'anthropic' | 'gemini';

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
  audioInputTokens?: number;
  audioOutputTokens?: number;
}

export interface TokenLogprob {
  token: string;
  logprob: number;
  top: Array<{ token: string; logprob: number }>;
}

export interface TextResult {
  output: OutputItem[];
  finishReason: FinishReason;
  usage: TokenUsage;
  logprobs?: TokenLogprob[];
  /** Model version the provider reports, when it reports one. */
  modelVersion?: string;
  upstreamId?: string;
  /** The processing tier the provider says served the call (OpenAI's `service_tier`: `default`, `flex`, `priority`). */
  serviceTier?: string;
}

/** What a stream parser emits, in order; the worker turns these into public SSE events. */
export type TextStreamEvent =
  | { type: 'text_delta'; text: string }
  | { type: 'reasoning_delta'; text: string }
  /**
   * The reasoning item in progress is whole (OpenAI's Responses API: its `response.output_item.done`), with the
   * reasoning as the provider encrypted it when the request asked (`include: ["reasoning.encrypted_content"]`). A
   * reasoning delta after it starts another reasoning item.
   */
  | { type: 'reasoning_end'; encryptedContent?: string }
  | { type: 'tool_call_start'; index: number; callId: string; name: string }
  | { type: 'tool_call_delta'; index: number; argumentsDelta: string }
  | { type: 'usage'; usage: TokenUsage }
  | { type: 'finish'; finishReason: FinishReason; modelVersion?: string; serviceTier?: string }
  | { type: 'error'; message: string; raw?: string };

// ---------- embeddings ----------

export type EmbeddingInput =
  | { type: 'text'; text: string }
  /** Token ids of the model's own tokenizer (OpenAI's `input: number[] | number[][]`). */
  | { type: 'tokens'; tokens: number[] }
  | { type: 'multimodal'; content: Array<{ type: 'text'; text: string } | { type: 'image_url'; url: string }> };

export interface EmbeddingRequest {
  model: string;
  inputs: EmbeddingInput[];
  dimensions?: number;
  user?: string;
}

export interface EmbeddingResult {
  /** One float vector per input, in input order. */
  vectors: number[][];
  usage: { inputTokens: number };
  modelVersion?: string;
}

// ---------- I/O descriptions (adapters stay pure: they describe requests, `api.ts` performs them) ----------

export interface HttpRequestSpec {
  method: 'GET' | 'POST';
  /** Path and query appended to the provider's `baseUrl`. */
  path: string;
  headers: Record<string, string>;
  /** A JSON body. */
  body?: unknown;
  /**
   * What the request could not carry as the caller asked (a value replaced, a field left out, a rule the provider
   * enforces): added to the generation's warnings when this request answers.
   */
  warnings?: string[];
  /** A `multipart/form-data` body instead (a provider's file upload): text fields, then one file part. */
  multipart?: { fields: Record<string, string>; file: { field: string; filename: string; contentType: string; data: string } };
  /** How the 2xx reply is read: `json` (default; anything else is a `malformed_reply`) or `text` (JSONL results). */
  replyAs?: 'json' | 'text';
}

/** An upstream failure, classified once (see shared/providers/upstream-error.ts). */
export interface UpstreamFailure {
  /** `provider_error`, `upstream_timeout`, `rate_limited`, `malformed_reply`, `bad_request`, `unauthorized`. */
  reason: 'provider_error' | 'upstream_timeout' | 'rate_limited' | 'malformed_reply' | 'bad_request' | 'unauthorized';
  status?: number;
  message: string;
  raw?: string;
  /** Whether trying the next endpoint makes sense (5xx, 429, timeout, malformed: yes; 400: no). */
  fallback: boolean;
}
