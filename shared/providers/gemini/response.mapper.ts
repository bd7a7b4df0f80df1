/** Gemini replies → canonical results. Pure. */
import type { ErrorBodyInfo } from '../adapter.types';
import type { EmbeddingRequest, EmbeddingResult, FinishReason, OutputItem, TextResult, TokenLogprob, TokenUsage, UpstreamFailure } from '../provider.types';
import { arr, isRecord, malformed, num, rec, str } from '../mapper-utils';

/** https://ai.google.dev/api/generate-content#FinishReason */
export const GEMINI_FINISH_REASONS: ReadonlyMap<string, FinishReason> = new Map<string, FinishReason>([
  ['STOP', 'stop'],
  ['FINISH_REASON_UNSPECIFIED', 'stop'],
  ['MAX_TOKENS', 'length'],
  ['SAFETY', 'content_filter'],
  ['RECITATION', 'content_filter'],
  ['LANGUAGE', 'content_filter'],
  ['BLOCKLIST', 'content_filter'],
  ['PROHIBITED_CONTENT', 'content_filter'],
  ['SPII', 'content_filter'],
  ['IMAGE_SAFETY', 'content_filter'],
  ['OTHER', 'error'],
  ['MALFORMED_FUNCTION_CALL', 'error'],
  ['UNEXPECTED_TOOL_CALL', 'error'],
  ['TOO_MANY_TOOL_CALLS', 'error'],
]);

/** Gemini says STOP after function calls too; ours says tool_calls when the answer asks for them. */
export function geminiFinishReason(value: unknown, hasFunctionCalls: boolean): FinishReason {
  const mapped = (typeof value === 'string' && GEMINI_FINISH_REASONS.get(value)) || 'stop';
  return mapped === 'stop' && hasFunctionCalls ? 'tool_calls' : mapped;
}

/** Google RPC status names in `error.status`. https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes */
export const GEMINI_ERROR_KINDS: ReadonlyMap<string, UpstreamFailure['reason']> = new Map<string, UpstreamFailure['reason']>([
  ['INVALID_ARGUMENT', 'bad_request'],
  ['FAILED_PRECONDITION', 'bad_request'],
  ['NOT_FOUND', 'bad_request'],
  ['UNAUTHENTICATED', 'unauthorized'],
  ['PERMISSION_DENIED', 'unauthorized'],
  ['RESOURCE_EXHAUSTED', 'rate_limited'],
  ['INTERNAL', 'provider_error'],
  ['UNAVAILABLE', 'provider_error'],
  ['DEADLINE_EXCEEDED', 'upstream_timeout'],
]);

/** `{"error": {"code", "message", "status"}}`; error replies may be wrapped in a one-element array. */
export function extractGeminiError(body: unknown): ErrorBodyInfo {
  const b = Array.isArray(body) ? body[0] : body;
  const e = rec(rec(b).error);
  const message = str(e.message);
  const status = str(e.status);
  const reason = status ? GEMINI_ERROR_KINDS.get(status) : undefined;
  return { ...(message !== undefined && { message }), ...(reason !== undefined && { reason }) };
}

/**
 * https://ai.google.dev/api/generate-content#UsageMetadata — `promptTokenCount` already includes cached tokens;
 * `candidatesTokenCount` excludes thinking, which ours counts as output (OpenAI's convention).
 */
export function geminiUsage(u: unknown): TokenUsage {
  const usage = rec(u);
  const thoughts = num(usage.thoughtsTokenCount) ?? 0;
  const cached = num(usage.cachedContentTokenCount) ?? 0;
  const result: TokenUsage = {
    inputTokens: (num(usage.promptTokenCount) ?? 0) + (num(usage.toolUsePromptTokenCount) ?? 0),
    outputTokens: (num(usage.candidatesTokenCount) ?? 0) + thoughts,
  };
  if (cached) result.cachedTokens = cached;
  if (thoughts) result.reasoningTokens = thoughts;
  return result;
}

/** https://ai.google.dev/api/generate-content#LogprobsResult — chosen token i pairs with topCandidates[i]. */
export function geminiLogprobs(result: unknown): TokenLogprob[] {
  const r = rec(result);
  const top = arr(r.topCandidates);
  return arr(r.chosenCandidates)
    .filter(isRecord)
    .map((chosen, i) => ({
      token: str(chosen.token) ?? '',
      logprob: num(chosen.logProbability) ?? 0,
      top: arr(rec(top[i]).candidates)
        .filter(isRecord)
        .map((c) => ({ token: str(c.token) ?? '', logprob: num(c.logProbability) ?? 0 })),
    }));
}

/** Ids for function calls: Gemini's own `id` when it sends one, else derived from the response id. */
export function geminiCallId(call: Record<string, unknown>, responseId: string, ordinal: number): string {
  return str(call.id) ?? `call_${responseId}_${ordinal}`;
}

/** https://ai.google.dev/api/generate-content#generatecontentresponse */
export function parseGenerateContent(json: unknown): TextResult {
  const body = rec(json);
  const candidates = body.candidates;
  const id = str(body.responseId) ?? 'gemini';
  const usage = geminiUsage(body.usageMetadata);
  const meta: Pick<TextResult, 'modelVersion' | 'upstreamId'> = {
    ...(str(body.modelVersion) !== undefined && { modelVersion: str(body.modelVersion) }),
    ...(str(body.responseId) !== undefined && { upstreamId: id }),
  };
  if (!Array.isArray(candidates) || candidates.length === 0) {
    // A blocked prompt answers with promptFeedback and no candidates.
    if (isRecord(body.promptFeedback)) return { output: [], finishReason: 'content_filter', usage, ...meta };
    return malformed('Gemini reply without candidates', json);
  }
  const candidate = rec(candidates[0]);
  const output: OutputItem[] = [];
  const texts: Array<{ type: 'output_text'; text: string }> = [];
  const thoughts: string[] = [];
  const calls: OutputItem[] = [];
  for (const part of arr(rec(candidate.content).parts)) {
    if (!isRecord(part)) continue;
    if (isRecord(part.functionCall)) {
      const fc = part.functionCall;
      const callId = geminiCallId(fc, id, calls.length);
      calls.push({ type: 'function_call', id: `fc_${callId}`, call_id: callId, name: str(fc.name) ?? '', arguments: JSON.stringify(fc.args ?? {}) });
    } else if (typeof part.text === 'string') {
      if (part.thought === true) thoughts.push(part.text);
      else texts.push({ type: 'output_text', text: part.text });
    }
  }
  if (thoughts.length > 0) output.push({ type: 'reasoning', id: `rs_${id}`, summary: thoughts.map((text) => ({ type: 'summary_text', text })) });
  if (texts.length > 0) output.push({ type: 'message', id: `msg_${id}`, role: 'assistant', content: texts });
  output.push(...calls);

  const result: TextResult = { output, finishReason: geminiFinishReason(candidate.finishReason, calls.length > 0), usage, ...meta };
  if (isRecord(candidate.logprobsResult)) result.logprobs = geminiLogprobs(candidate.logprobsResult);
  return result;
}

/**
 * https://ai.google.dev/api/embeddings#batchembedcontentsresponse — it reports no token count, so unless a
 * `usageMetadata` is present we estimate one token per 4 characters of text input (for billing only).
 */
export function parseBatchEmbed(json: unknown, req: EmbeddingRequest): EmbeddingResult {
  const body = rec(json);
  const embeddings = arr(body.embeddings);
  if (embeddings.length !== req.inputs.length) return malformed(`Gemini embeddings: ${embeddings.length} vectors for ${req.inputs.length} inputs`, json);
  const vectors = embeddings.map((e) => {
    const values = rec(e).values;
    return Array.isArray(values) && values.every((v) => typeof v === 'number') ? (values as number[]) : malformed('Gemini embedding without values[]', json);
  });
  const reported = num(rec(body.usageMetadata).promptTokenCount);
  return { vectors, usage: { inputTokens: reported ?? estimateTokens(req) } };
}

function estimateTokens(req: EmbeddingRequest): number {
  let chars = 0;
  for (const input of req.inputs) {
    if (input.type === 'text') chars += input.text.length;
    else if (input.type === 'tokens') chars += input.tokens.length * 4;
    else for (const c of input.content) if (c.type === 'text') chars += c.text.length;
  }
  return Math.ceil(chars / 4);
}
