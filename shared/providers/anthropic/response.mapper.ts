/** Anthropic Messages replies → canonical results. Pure. */
import type { ErrorBodyInfo } from '../adapter.types';
import type { FinishReason, OutputItem, TextResult, TokenUsage, UpstreamFailure } from '../provider.types';
import { arr, isRecord, malformed, num, rec, str } from '../mapper-utils';

/** https://docs.anthropic.com/en/api/handling-stop-reasons */
export const ANTHROPIC_STOP_REASONS: ReadonlyMap<string, FinishReason> = new Map<string, FinishReason>([
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['pause_turn', 'stop'],
  ['max_tokens', 'length'],
  ['model_context_window_exceeded', 'length'],
  ['tool_use', 'tool_calls'],
  ['refusal', 'content_filter'],
]);

export function anthropicFinishReason(value: unknown): FinishReason {
  return (typeof value === 'string' && ANTHROPIC_STOP_REASONS.get(value)) || 'stop';
}

/** https://docs.anthropic.com/en/api/errors — `error.type`; used for in-stream `error` events. */
export const ANTHROPIC_ERROR_KINDS: ReadonlyMap<string, UpstreamFailure['reason']> = new Map<string, UpstreamFailure['reason']>([
  ['invalid_request_error', 'bad_request'],
  ['request_too_large', 'bad_request'],
  ['not_found_error', 'bad_request'],
  ['authentication_error', 'unauthorized'],
  ['permission_error', 'unauthorized'],
  ['billing_error', 'unauthorized'],
  ['rate_limit_error', 'rate_limited'],
  ['api_error', 'provider_error'],
  ['overloaded_error', 'provider_error'],
  ['timeout_error', 'upstream_timeout'],
]);

/** `{"type": "error", "error": {"type", "message"}}` */
export function extractAnthropicError(body: unknown): ErrorBodyInfo {
  const e = rec(rec(body).error);
  const message = str(e.message);
  const type = str(e.type);
  const reason = type ? ANTHROPIC_ERROR_KINDS.get(type) : undefined;
  return { ...(message !== undefined && { message }), ...(reason !== undefined && { reason }) };
}

/**
 * Anthropic's `input_tokens` excludes cache reads and writes; ours counts every input token (OpenAI's
 * convention), with `cachedTokens` and `cacheWriteTokens` as the parts of it billed differently.
 */
export function anthropicUsage(u: unknown): TokenUsage {
  const usage = rec(u);
  const plain = num(usage.input_tokens) ?? 0;
  const read = num(usage.cache_read_input_tokens) ?? 0;
  const write = num(usage.cache_creation_input_tokens) ?? 0;
  const result: TokenUsage = { inputTokens: plain + read + write, outputTokens: num(usage.output_tokens) ?? 0 };
  if (read) result.cachedTokens = read;
  if (write) result.cacheWriteTokens = write;
  return result;
}

/** https://docs.anthropic.com/en/api/messages (response body) */
export function parseMessage(json: unknown): TextResult {
  const body = rec(json);
  if (!Array.isArray(body.content)) return malformed('Anthropic message without content[]', json);
  const id = str(body.id) ?? 'msg';
  const output: OutputItem[] = [];
  const texts: Array<{ type: 'output_text'; text: string }> = [];
  const thinking: string[] = [];
  const calls: OutputItem[] = [];
  for (const block of body.content) {
    if (!isRecord(block)) continue;
    if (block.type === 'text') texts.push({ type: 'output_text', text: str(block.text) ?? '' });
    else if (block.type === 'thinking') thinking.push(str(block.thinking) ?? '');
    else if (block.type === 'tool_use') {
      const callId = str(block.id) ?? `toolu_${id}_${calls.length}`;
      calls.push({ type: 'function_call', id: `fc_${callId}`, call_id: callId, name: str(block.name) ?? '', arguments: JSON.stringify(block.input ?? {}) });
    }
    // redacted_thinking and server tool blocks carry nothing we can show
  }
  if (thinking.length > 0) output.push({ type: 'reasoning', id: `rs_${id}`, summary: thinking.map((text) => ({ type: 'summary_text', text })) });
  if (texts.length > 0) output.push({ type: 'message', id: `msg_${id}`, role: 'assistant', content: texts });
  output.push(...calls);

  const result: TextResult = { output, finishReason: anthropicFinishReason(body.stop_reason), usage: anthropicUsage(body.usage) };
  const model = str(body.model);
  if (model) result.modelVersion = model;
  if (str(body.id)) result.upstreamId = id;
  return result;
}
