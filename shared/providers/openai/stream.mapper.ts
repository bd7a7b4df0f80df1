/**
 * Chat Completions stream → canonical events. https://platform.openai.com/docs/api-reference/chat-streaming
 * The last choice chunk carries `finish_reason`; with `stream_options.include_usage` one more chunk with empty
 * `choices` carries `usage`; then `data: [DONE]`. So `finish` is held until usage (or [DONE], or the end) arrives.
 */
import type { SseEvent, TextStreamParser } from '../adapter.types';
import type { FinishReason, TextStreamEvent, TokenUsage } from '../provider.types';
import { arr, isRecord, num, parseStreamJson, rec, str } from '../mapper-utils';
import { extractOpenAIError, openaiFinishReason, openaiUsage, reasoningText } from './response.mapper';
import { ResponsesStreamParser } from './responses-response.mapper';

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
      const reasoning = reasoningText(delta);
      if (reasoning) out.push({ type: 'reasoning_delta', text: reasoning });
      const content = str(delta.content);
      if (content) out.push({ type: 'text_delta', text: content });
      for (const call of arr(delta.tool_calls)) if (isRecord(call)) this.toolCall(call, out);
      if (c.finish_reason !== null && c.finish_reason !== undefined) this.pendingFinish = openaiFinishReason(c.finish_reason);
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
