/** OpenAI replies → canonical results. Pure. */
import type { ErrorBodyInfo, ImageResult } from '../adapter.types';
import type { EmbeddingRequest, EmbeddingResult, FinishReason, OutputItem, TextResult, TokenLogprob, TokenUsage, UpstreamFailure } from '../provider.types';
import { arr, isRecord, malformed, num, rec, str } from '../mapper-utils';

/** https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices (`finish_reason`); any other is `stop`. */
export const OPENAI_FINISH_REASONS: ReadonlyMap<string, FinishReason> = new Map<string, FinishReason>([
  ['stop', 'stop'],
  ['length', 'length'],
  ['tool_calls', 'tool_calls'],
  ['function_call', 'tool_calls'], // deprecated functions API
  ['content_filter', 'content_filter'],
]);

/**
 * Error `type`/`code` values → our reasons; consulted for in-stream errors (a non-2xx status decides by itself).
 * https://platform.openai.com/docs/guides/error-codes/api-errors
 */
export const OPENAI_ERROR_KINDS: ReadonlyMap<string, UpstreamFailure['reason']> = new Map<string, UpstreamFailure['reason']>([
  ['invalid_request_error', 'bad_request'],
  ['context_length_exceeded', 'bad_request'],
  ['authentication_error', 'unauthorized'],
  ['invalid_api_key', 'unauthorized'],
  ['permission_error', 'unauthorized'],
  ['rate_limit_exceeded', 'rate_limited'],
  ['insufficient_quota', 'rate_limited'],
  ['server_error', 'provider_error'],
  ['api_error', 'provider_error'],
  ['timeout', 'upstream_timeout'],
]);

/** `{"error": {"message", "type", "code"}}` (some compatible servers send `{"error": "text"}` or `{"message"}`). */
export function extractOpenAIError(body: unknown): ErrorBodyInfo {
  const b = rec(body);
  if (typeof b.error === 'string') return { message: b.error };
  const e = rec(b.error);
  const message = str(e.message) ?? str(b.message);
  const kind = [str(e.code), str(e.type)].map((k) => (k ? OPENAI_ERROR_KINDS.get(k) : undefined)).find(Boolean);
  return { ...(message !== undefined && { message }), ...(kind !== undefined && { reason: kind }) };
}

export function openaiUsage(u: unknown): TokenUsage {
  const usage = rec(u);
  const prompt = rec(usage.prompt_tokens_details);
  const completion = rec(usage.completion_tokens_details);
  const result: TokenUsage = { inputTokens: num(usage.prompt_tokens) ?? 0, outputTokens: num(usage.completion_tokens) ?? 0 };
  const cached = num(prompt.cached_tokens);
  const reasoning = num(completion.reasoning_tokens);
  const audioIn = num(prompt.audio_tokens);
  const audioOut = num(completion.audio_tokens);
  if (cached) result.cachedTokens = cached;
  if (reasoning) result.reasoningTokens = reasoning;
  if (audioIn) result.audioInputTokens = audioIn;
  if (audioOut) result.audioOutputTokens = audioOut;
  return result;
}

export function openaiLogprobs(content: unknown): TokenLogprob[] {
  return arr(content).filter(isRecord).map((t) => ({
    token: str(t.token) ?? '',
    logprob: num(t.logprob) ?? 0,
    top: arr(t.top_logprobs)
      .filter(isRecord)
      .map((a) => ({ token: str(a.token) ?? '', logprob: num(a.logprob) ?? 0 })),
  }));
}

/** https://platform.openai.com/docs/api-reference/chat/object */
export function parseChatCompletion(json: unknown): TextResult {
  const body = rec(json);
  const choice: unknown = Array.isArray(body.choices) ? body.choices[0] : undefined;
  if (!isRecord(choice) || !isRecord(choice.message)) return malformed('OpenAI chat completion without choices[0].message', json);
  const message = choice.message;
  const id = str(body.id) ?? 'chatcmpl';
  const output: OutputItem[] = [];

  // Compatible servers (DeepSeek, vLLM, OpenRouter) put chain-of-thought in `reasoning_content` or `reasoning`.
  const reasoning = str(message.reasoning_content) ?? str(message.reasoning);
  if (reasoning) output.push({ type: 'reasoning', id: `rs_${id}`, summary: [{ type: 'summary_text', text: reasoning }] });
  const text = str(message.content) ?? str(message.refusal);
  if (text) output.push({ type: 'message', id: `msg_${id}`, role: 'assistant', content: [{ type: 'output_text', text }] });
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (!isRecord(call)) continue;
    const fn = rec(call.function);
    const callId = str(call.id) ?? `call_${id}_${output.length}`;
    output.push({ type: 'function_call', id: `fc_${callId}`, call_id: callId, name: str(fn.name) ?? '', arguments: str(fn.arguments) ?? '' });
  }

  const finish = choice.finish_reason;
  const result: TextResult = { output, finishReason: (typeof finish === 'string' && OPENAI_FINISH_REASONS.get(finish)) || 'stop', usage: openaiUsage(body.usage) };
  const logprobs = rec(choice.logprobs).content;
  if (Array.isArray(logprobs)) result.logprobs = openaiLogprobs(logprobs);
  const model = str(body.model);
  if (model) result.modelVersion = model;
  if (str(body.id)) result.upstreamId = id;
  const tier = str(body.service_tier);
  if (tier) result.serviceTier = tier;
  return result;
}

/** https://platform.openai.com/docs/api-reference/embeddings/object */
export function parseEmbeddings(json: unknown, req: EmbeddingRequest): EmbeddingResult {
  const body = rec(json);
  const data = arr(body.data).filter(isRecord);
  if (data.length !== req.inputs.length) return malformed(`OpenAI embeddings: ${data.length} vectors for ${req.inputs.length} inputs`, json);
  const ordered = [...data].sort((a, b) => (num(a.index) ?? 0) - (num(b.index) ?? 0));
  const vectors = ordered.map((d) => toVector(d.embedding, json));
  const usage = rec(body.usage);
  const result: EmbeddingResult = { vectors, usage: { inputTokens: num(usage.prompt_tokens) ?? num(usage.total_tokens) ?? 0 } };
  const model = str(body.model);
  if (model) result.modelVersion = model;
  return result;
}

/** Some compatible servers ignore `encoding_format: "float"` and send base64 little-endian float32. */
function toVector(embedding: unknown, json: unknown): number[] {
  if (Array.isArray(embedding) && embedding.every((x) => typeof x === 'number')) return embedding as number[];
  if (typeof embedding === 'string') {
    const bytes = Buffer.from(embedding, 'base64');
    const vector: number[] = [];
    for (let i = 0; i + 4 <= bytes.length; i += 4) vector.push(bytes.readFloatLE(i));
    return vector;
  }
  return malformed('OpenAI embeddings: embedding is neither a float array nor base64', json);
}

/** https://platform.openai.com/docs/api-reference/images/object */
export function parseImages(json: unknown): ImageResult {
  const body = rec(json);
  if (!Array.isArray(body.data)) return malformed('OpenAI images reply without data[]', json);
  const images = body.data.filter(isRecord).map((d) => {
    const b64 = str(d.b64_json);
    const url = str(d.url);
    const revisedPrompt = str(d.revised_prompt);
    return { ...(b64 !== undefined && { b64 }), ...(url !== undefined && { url }), ...(revisedPrompt !== undefined && { revisedPrompt }) };
  });
  const result: ImageResult = { images };
  if (isRecord(body.usage)) {
    const u = body.usage;
    const details = rec(u.input_tokens_details);
    result.usage = { inputTokens: num(u.input_tokens) ?? 0, outputTokens: num(u.output_tokens) ?? 0 };
    const imageIn = num(details.image_tokens);
    const textIn = num(details.text_tokens);
    if (imageIn !== undefined) result.usage.imageInputTokens = imageIn;
    if (textIn !== undefined) result.usage.textInputTokens = textIn;
  }
  for (const key of ['output_format', 'size', 'quality', 'background'] as const) {
    const value = str(body[key]);
    if (value === undefined) continue;
    if (key === 'output_format') result.outputFormat = value;
    else result[key] = value;
  }
  return result;
}
