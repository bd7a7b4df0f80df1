/**
 * OpenAI's streams, and the Responses API's replies whole or streamed (below), → canonical events.
 *
 * Chat Completions stream → canonical events. https://platform.openai.com/docs/api-reference/chat-streaming
 * The last choice chunk carries `finish_reason`; with `stream_options.include_usage` one more chunk with empty
 * `choices` carries `usage`; then `data: [DONE]`. So `finish` is held until usage (or [DONE], or the end) arrives.
 */
import type { SseEvent, TextStreamParser } from '../adapter.types';
import type { FinishReason, TextStreamEvent, TokenUsage, OutputItem, TextResult, TokenLogprob } from '../provider.types';
import { arr, isRecord, num, parseStreamJson, rec, str, malformed, type Json } from '../mapper-utils';
import { extractOpenAIError, OPENAI_FINISH_REASONS, openaiUsage, openaiLogprobs } from './response.mapper';

export class OpenAIStreamParser implements TextStreamParser {
  private pendingFinish: FinishReason | undefined;
  private usage: TokenUsage | undefined;
  private modelVersion: string | undefined;
  private serviceTier: string | undefined;
  private finished = false;
  /** Upstream tool index → our ordinal; some compatible servers omit `index`, so key by id as well. */
  private readonly tools = new Map<string, number>();
  private lastToolKey: string | undefined;

  push(event: SseEvent): TextStreamEvent[] {
    const data = event.data.trim();
    if (data === '[DONE]') return this.flush();
    const parsed = parseStreamJson(data);
    if (!parsed.ok) return [parsed.event];
    const chunk = parsed.value;
    if (chunk.error !== undefined) {
      return [{ type: 'error', message: extractOpenAIError(chunk).message ?? 'upstream stream error', raw: data }];
    }
    const out: TextStreamEvent[] = [];
    const model = str(chunk.model);
    if (model) this.modelVersion = model;
    const tier = str(chunk.service_tier);
    if (tier) this.serviceTier = tier;

    for (const c of arr(chunk.choices)) {
      if (!isRecord(c) || (num(c.index) ?? 0) !== 0) continue;
      const delta = rec(c.delta);
      const reasoning = str(delta.reasoning_content) ?? str(delta.reasoning); // as in parseChatCompletion
      if (reasoning) out.push({ type: 'reasoning_delta', text: reasoning });
      const content = str(delta.content);
      if (content) out.push({ type: 'text_delta', text: content });
      for (const call of arr(delta.tool_calls)) if (isRecord(call)) this.toolCall(call, out);
      const finish = c.finish_reason;
      if (finish !== null && finish !== undefined) this.pendingFinish = (typeof finish === 'string' && OPENAI_FINISH_REASONS.get(finish)) || 'stop';
    }
    if (isRecord(chunk.usage)) this.usage = openaiUsage(chunk.usage);
    // The usage chunk is the last one before [DONE]; no need to wait for [DONE] once both are known.
    if (this.pendingFinish && this.usage) out.push(...this.flush());
    return out;
  }

  end(): TextStreamEvent[] {
    return this.flush();
  }

  private toolCall(call: Record<string, unknown>, out: TextStreamEvent[]): void {
    const fn = rec(call.function);
    const id = str(call.id);
    const index = num(call.index);
    const key = index !== undefined ? `i${index}` : id !== undefined ? `id${id}` : this.lastToolKey;
    if (key === undefined) return;
    let ordinal = this.tools.get(key);
    if (ordinal === undefined) {
      ordinal = this.tools.size;
      this.tools.set(key, ordinal);
      out.push({ type: 'tool_call_start', index: ordinal, callId: id ?? `call_${ordinal}`, name: str(fn.name) ?? '' });
    }
    this.lastToolKey = key;
    const args = str(fn.arguments);
    if (args) out.push({ type: 'tool_call_delta', index: ordinal, argumentsDelta: args });
  }

  private flush(): TextStreamEvent[] {
    if (this.finished) return [];
    this.finished = true;
    if (!this.pendingFinish) return [{ type: 'error', message: 'OpenAI stream ended without a finish_reason' }];
    const out: TextStreamEvent[] = [];
    if (this.usage) out.push({ type: 'usage', usage: this.usage });
    out.push({ type: 'finish', finishReason: this.pendingFinish, ...(this.modelVersion !== undefined && { modelVersion: this.modelVersion }), ...(this.serviceTier !== undefined && { serviceTier: this.serviceTier }) });
    return out;
  }
}

/**
 * A chat completions stream, or a Responses API stream (an endpoint with `responsesApi`): told apart by the first
 * event, whose type names a `response.*` event in the latter.
 */
class OpenAIAnyStreamParser implements TextStreamParser {
  private parser: TextStreamParser | undefined;

  push(event: SseEvent): TextStreamEvent[] {
    this.parser ??= event.event?.startsWith('response.') || /^\s*\{\s*"type"\s*:\s*"response\./.test(event.data) ? new ResponsesStreamParser() : new OpenAIStreamParser();
    return this.parser.push(event);
  }

  end(): TextStreamEvent[] {
    return (this.parser ?? new OpenAIStreamParser()).end();
  }
}

export function createOpenAIStreamParser(): TextStreamParser {
  return new OpenAIAnyStreamParser();
}

/**
 * OpenAI Responses API replies → canonical results: the response object
 * (https://platform.openai.com/docs/api-reference/responses/object) and its stream
 * (https://platform.openai.com/docs/api-reference/responses-streaming). Pure.
 */

/** `incomplete_details.reason` → ours. */
export const RESPONSES_INCOMPLETE: ReadonlyMap<string, FinishReason> = new Map<string, FinishReason>([
  ['max_output_tokens', 'length'],
  ['content_filter', 'content_filter'],
]);

/** Usage: `input_tokens` includes the cached ones, `output_tokens` the reasoning ones (as ours). */
export function responsesUsage(u: unknown): TokenUsage {
  const usage = rec(u);
  const result: TokenUsage = { inputTokens: num(usage.input_tokens) ?? 0, outputTokens: num(usage.output_tokens) ?? 0 };
  const cached = num(rec(usage.input_tokens_details).cached_tokens);
  const reasoning = num(rec(usage.output_tokens_details).reasoning_tokens);
  if (cached) result.cachedTokens = cached;
  if (reasoning) result.reasoningTokens = reasoning;
  return result;
}

/** The finish of a response of this status, given whether it asks for calls. */
function finishOf(response: Json, hasCalls: boolean): FinishReason {
  const status = str(response.status);
  if (status === 'incomplete') return RESPONSES_INCOMPLETE.get(str(rec(response.incomplete_details).reason) ?? '') ?? 'length';
  if (status === 'failed' || status === 'cancelled') return 'error';
  return hasCalls ? 'tool_calls' : 'stop';
}

export function parseResponsesResponse(json: unknown): TextResult {
  const body = rec(json);
  if (!Array.isArray(body.output)) return malformed('OpenAI response without output[]', json);
  const output: OutputItem[] = [];
  const logprobs: TokenLogprob[] = [];
  let sawLogprobs = false;
  for (const item of body.output.filter(isRecord)) {
    const id = str(item.id) ?? `item_${output.length}`;
    if (item.type === 'message') {
      const parts = arr(item.content).filter(isRecord);
      const text = parts.map((p) => str(p.text) ?? str(p.refusal) ?? '').join('');
      for (const p of parts) {
        if (Array.isArray(p.logprobs)) {
          sawLogprobs ||= p.logprobs.length > 0;
          logprobs.push(...openaiLogprobs(p.logprobs));
        }
      }
      if (text) output.push({ type: 'message', id, role: 'assistant', content: [{ type: 'output_text', text }] });
    } else if (item.type === 'function_call') {
      const callId = str(item.call_id) ?? id;
      output.push({ type: 'function_call', id, call_id: callId, name: str(item.name) ?? '', arguments: str(item.arguments) ?? '' });
    } else if (item.type === 'reasoning') {
      const summary = arr(item.summary).filter(isRecord).map((s) => ({ type: 'summary_text' as const, text: str(s.text) ?? '' }));
      const encrypted = str(item.encrypted_content);
      if (summary.length > 0 || encrypted) output.push({ type: 'reasoning', id, summary, ...(encrypted !== undefined && { encrypted_content: encrypted }) });
    }
  }
  const result: TextResult = { output, finishReason: finishOf(body, output.some((o) => o.type === 'function_call')), usage: responsesUsage(body.usage) };
  if (sawLogprobs) result.logprobs = logprobs;
  const model = str(body.model);
  if (model) result.modelVersion = model;
  const id = str(body.id);
  if (id) result.upstreamId = id;
  const tier = str(body.service_tier);
  if (tier) result.serviceTier = tier;
  return result;
}

/**
 * The Responses stream → canonical events: text and reasoning summary deltas, the end of each reasoning item with its
 * encrypted reasoning (`response.output_item.done`), function calls (opened by `response.output_item.added`, their
 * arguments by `response.function_call_arguments.delta`), then usage and finish
 * from `response.completed` / `response.incomplete`. `response.failed` and `error` events are errors.
 */
export class ResponsesStreamParser implements TextStreamParser {
  /** Upstream `output_index` of each function call → our ordinal. */
  private readonly calls = new Map<number, number>();
  private finished = false;

  push(event: SseEvent): TextStreamEvent[] {
    const parsed = parseStreamJson(event.data.trim());
    if (!parsed.ok) return [parsed.event];
    const e = parsed.value;
    const type = str(e.type) ?? event.event;
    switch (type) {
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        const text = str(e.delta);
        return text ? [{ type: 'text_delta', text }] : [];
      }
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta': {
        const text = str(e.delta);
        return text ? [{ type: 'reasoning_delta', text }] : [];
      }
      case 'response.output_item.added': {
        const item = rec(e.item);
        if (item.type !== 'function_call') return [];
        const ordinal = this.calls.size;
        this.calls.set(num(e.output_index) ?? ordinal, ordinal);
        const out: TextStreamEvent[] = [{ type: 'tool_call_start', index: ordinal, callId: str(item.call_id) ?? `call_${ordinal}`, name: str(item.name) ?? '' }];
        const args = str(item.arguments);
        if (args) out.push({ type: 'tool_call_delta', index: ordinal, argumentsDelta: args });
        return out;
      }
      case 'response.output_item.done': {
        // A reasoning item ends whole: its encrypted reasoning (when asked for) comes only here.
        const item = rec(e.item);
        if (item.type !== 'reasoning') return [];
        const encrypted = str(item.encrypted_content);
        if (encrypted === undefined && arr(item.summary).length === 0) return [];
        return [{ type: 'reasoning_end', ...(encrypted !== undefined && { encryptedContent: encrypted }) }];
      }
      case 'response.function_call_arguments.delta': {
        const ordinal = this.calls.get(num(e.output_index) ?? -1);
        const delta = str(e.delta);
        return ordinal !== undefined && delta ? [{ type: 'tool_call_delta', index: ordinal, argumentsDelta: delta }] : [];
      }
      case 'response.completed':
      case 'response.incomplete': {
        if (this.finished) return [];
        this.finished = true;
        const response = rec(e.response);
        const out: TextStreamEvent[] = [];
        if (isRecord(response.usage)) out.push({ type: 'usage', usage: responsesUsage(response.usage) });
        const model = str(response.model);
        const tier = str(response.service_tier);
        out.push({ type: 'finish', finishReason: finishOf(response, this.calls.size > 0), ...(model !== undefined && { modelVersion: model }), ...(tier !== undefined && { serviceTier: tier }) });
        return out;
      }
      case 'response.failed': {
        this.finished = true;
        const message = str(rec(rec(e.response).error).message) ?? 'the response failed';
        return [{ type: 'error', message, raw: event.data.slice(0, 2000) }];
      }
      case 'error':
        this.finished = true;
        return [{ type: 'error', message: extractOpenAIError({ error: e }).message ?? str(e.message) ?? 'upstream stream error', raw: event.data.slice(0, 2000) }];
      default:
        return [];
    }
  }

  end(): TextStreamEvent[] {
    if (this.finished) return [];
    this.finished = true;
    return [{ type: 'error', message: 'OpenAI response stream ended before response.completed' }];
  }
}
