/**
 * Anthropic Messages stream → canonical events. https://docs.anthropic.com/en/docs/build-with-claude/streaming
 * message_start (input usage) → content_block_start/delta/stop… → message_delta (stop_reason, output usage)
 * → message_stop. `ping` is ignored; `error` becomes an error event.
 */
import type { SseEvent, TextStreamParser } from '../adapter.types';
import type { FinishReason, TextStreamEvent, TokenUsage } from '../provider.types';
import { num, parseStreamJson, rec, str } from '../mapper-utils';
import { anthropicFinishReason, anthropicUsage, extractAnthropicError } from './response.mapper';

const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;

export class AnthropicStreamParser implements TextStreamParser {
  /** Raw usage fields as Anthropic reports them; message_delta's values are cumulative and win. */
  private readonly usage: Record<string, number> = {};
  private modelVersion: string | undefined;
  private pendingFinish: FinishReason | undefined;
  private finished = false;
  /** Content block index → tool ordinal (text and thinking blocks share the block numbering). */
  private readonly tools = new Map<number, number>();

  push(event: SseEvent): TextStreamEvent[] {
    const parsed = parseStreamJson(event.data);
    if (!parsed.ok) return [parsed.event];
    const data = parsed.value;
    const type = str(data.type) ?? event.event;
    switch (type) {
      case 'message_start': {
        const message = rec(data.message);
        const model = str(message.model);
        if (model) this.modelVersion = model;
        this.takeUsage(message.usage);
        return [];
      }
      case 'content_block_start': {
        const block = rec(data.content_block);
        const index = num(data.index) ?? 0;
        if (block.type === 'tool_use') {
          const ordinal = this.tools.size;
          this.tools.set(index, ordinal);
          return [{ type: 'tool_call_start', index: ordinal, callId: str(block.id) ?? `toolu_${ordinal}`, name: str(block.name) ?? '' }];
        }
        const text = block.type === 'text' ? str(block.text) : undefined;
        return text ? [{ type: 'text_delta', text }] : [];
      }
      case 'content_block_delta': {
        const delta = rec(data.delta);
        const index = num(data.index) ?? 0;
        if (delta.type === 'text_delta') {
          const text = str(delta.text);
          return text ? [{ type: 'text_delta', text }] : [];
        }
        if (delta.type === 'thinking_delta') {
          const text = str(delta.thinking);
          return text ? [{ type: 'reasoning_delta', text }] : [];
        }
        if (delta.type === 'input_json_delta') {
          const ordinal = this.tools.get(index);
          const json = str(delta.partial_json);
          return ordinal !== undefined && json ? [{ type: 'tool_call_delta', index: ordinal, argumentsDelta: json }] : [];
        }
        return []; // signature_delta, citations_delta
      }
      case 'message_delta': {
        const delta = rec(data.delta);
        if (delta.stop_reason !== undefined && delta.stop_reason !== null) this.pendingFinish = anthropicFinishReason(delta.stop_reason);
        this.takeUsage(data.usage);
        return [];
      }
      case 'message_stop':
        return this.flush();
      case 'error':
        return [{ type: 'error', message: extractAnthropicError(data).message ?? 'Anthropic stream error', raw: event.data }];
      default:
        return []; // ping, content_block_stop, future event types
    }
  }

  end(): TextStreamEvent[] {
    return this.flush();
  }

  /** The input as `message_start` reported it; the output only once `message_delta` counted it (until then a placeholder). */
  usageSoFar(): Partial<TokenUsage> | undefined {
    if (this.usage.input_tokens === undefined) return undefined;
    const { outputTokens, ...input } = anthropicUsage(this.usage);
    return this.pendingFinish ? { ...input, outputTokens } : input;
  }

  private takeUsage(u: unknown): void {
    const usage = rec(u);
    for (const field of USAGE_FIELDS) {
      const value = num(usage[field]);
      if (value !== undefined) this.usage[field] = value;
    }
  }

  private flush(): TextStreamEvent[] {
    if (this.finished) return [];
    this.finished = true;
    if (!this.pendingFinish) return [{ type: 'error', message: 'Anthropic stream ended without a stop_reason' }];
    return [
      { type: 'usage', usage: anthropicUsage(this.usage) },
      { type: 'finish', finishReason: this.pendingFinish, ...(this.modelVersion !== undefined && { modelVersion: this.modelVersion }) },
    ];
  }
}

export function createAnthropicStreamParser(): TextStreamParser {
  return new AnthropicStreamParser();
}
