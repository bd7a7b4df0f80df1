/**
 * Canonical stream events → `chat.completion.chunk` objects
 * (https://platform.openai.com/docs/api-reference/chat-streaming). Each is sent as `data: <json>`; a successful
 * stream ends with `data: [DONE]`, a failed one with an error chunk and no `[DONE]` (the SDK throws on it).
 */
import type { FinishReason, TextStreamEvent } from '../providers/provider.types';
import type { PublicError } from './response-object.mapper';
import { errorType, type ErrorType } from '../errors/error-codes';
import { chatFinishReason, type ChatFinishReason } from './chat.mapper';
import type { ChatUsage } from './format-utils';

export const CHAT_STREAM_DONE = '[DONE]';

export interface ChatChunkDelta {
  role?: 'assistant';
  content?: string;
  refusal?: null;
  reasoning?: string;
  tool_calls?: Array<{
    index: number;
    id?: string;
    type?: 'function';
    function: { name?: string; arguments: string };
  }>;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: 0; delta: ChatChunkDelta; logprobs: null; finish_reason: ChatFinishReason | null }>;
  /** With `stream_options.include_usage`: null on every chunk but the last, which has no choices. */
  usage?: ChatUsage | null;
  /** On the closing chunks: the processing tier the provider says served the call, when it says. */
  service_tier?: string;
  switchyard?: Record<string, unknown>;
}

export interface ChatErrorChunk {
  /** OpenAI's `type` beside our code: the SDKs throw this object as an APIError mid-stream. */
  error: PublicError & { type: ErrorType };
}

export interface ChatStreamBase {
  id: string;
  /** Unix seconds. */
  created: number;
  /** Public model id: the one asked for, until `answeredBy` names the one that answers. */
  model: string;
  /** `stream_options.include_usage`. */
  includeUsage?: boolean;
}

export interface ChatStreamFormatter {
  /** The model that answers (after a fallback, not the one asked for): the chunks from here on name it. */
  answeredBy(model: string): void;
  /** The first chunk: the assistant role with empty content. `push` sends it first when not yet sent. */
  start(): ChatCompletionChunk[];
  push(event: TextStreamEvent): ChatCompletionChunk[];
  /** The chunk with `finish_reason`, then (with `includeUsage`) the usage chunk. Send `[DONE]` after them. */
  complete(final: { usage: ChatUsage; finishReason?: FinishReason; serviceTier?: string; warnings?: string[]; switchyard?: Record<string, unknown> }): ChatCompletionChunk[];
  /**
   * The error chunk that ends a failed stream (no `[DONE]` after it). With `usage` (a stream billed for what it
   * produced before failing) and `includeUsage`, the usage chunk comes first, so the client sees what was charged.
   */
  fail(error: PublicError, usage?: ChatUsage): Array<ChatCompletionChunk | ChatErrorChunk>;
}

export function createChatStreamFormatter(streamBase: ChatStreamBase): ChatStreamFormatter {
  const base = { ...streamBase };
  let started = false;
  let ended = false;
  let finishReason: FinishReason | undefined;
  let sawToolCall = false;

  const chunk = (delta: ChatChunkDelta, finish: ChatFinishReason | null = null): ChatCompletionChunk => {
    const c: ChatCompletionChunk = {
      id: base.id,
      object: 'chat.completion.chunk',
      created: base.created,
      model: base.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
    if (base.includeUsage) c.usage = null;
    return c;
  };

  function start(): ChatCompletionChunk[] {
    if (started || ended) return [];
    started = true;
    return [chunk({ role: 'assistant', content: '', refusal: null })];
  }

  function push(event: TextStreamEvent): ChatCompletionChunk[] {
    if (ended) return [];
    const out = start();
    switch (event.type) {
      case 'text_delta':
        if (event.text !== '') out.push(chunk({ content: event.text }));
        break;
      case 'reasoning_delta':
        if (event.text !== '') out.push(chunk({ reasoning: event.text }));
        break;
      case 'tool_call_start':
        sawToolCall = true;
        out.push(
          chunk({
            tool_calls: [{ index: event.index, id: event.callId, type: 'function', function: { name: event.name, arguments: '' } }],
          }),
        );
        break;
      case 'tool_call_delta':
        if (event.argumentsDelta !== '') {
          out.push(chunk({ tool_calls: [{ index: event.index, function: { arguments: event.argumentsDelta } }] }));
        }
        break;
      case 'finish':
        finishReason = event.finishReason;
        break;
      case 'usage':
      case 'error':
      case 'reasoning_end': // chat completions have no place for encrypted reasoning
        break;
    }
    return out;
  }

  function complete(final: Parameters<ChatStreamFormatter['complete']>[0]): ChatCompletionChunk[] {
    if (ended) return [];
    const out = start();
    ended = true;
    const reason = final.finishReason ?? finishReason ?? (sawToolCall ? 'tool_calls' : 'stop');
    out.push({ ...chunk({}, chatFinishReason(reason)), ...(final.serviceTier !== undefined && { service_tier: final.serviceTier }) });
    const switchyard: Record<string, unknown> = { ...final.switchyard };
    if (final.warnings && final.warnings.length > 0) switchyard.warnings = [...final.warnings];
    if (base.includeUsage) {
      out.push({
        id: base.id,
        object: 'chat.completion.chunk',
        created: base.created,
        model: base.model,
        choices: [],
        usage: final.usage,
        ...(final.serviceTier !== undefined && { service_tier: final.serviceTier }),
        switchyard,
      });
    } else if (Object.keys(switchyard).length > 0) {
      out[out.length - 1]!.switchyard = switchyard;
    }
    return out;
  }

  function fail(error: PublicError, usage?: ChatUsage): Array<ChatCompletionChunk | ChatErrorChunk> {
    if (ended) return [];
    ended = true;
    const out: Array<ChatCompletionChunk | ChatErrorChunk> = [];
    if (usage && base.includeUsage) out.push({ id: base.id, object: 'chat.completion.chunk', created: base.created, model: base.model, choices: [], usage });
    out.push({ error: { code: error.code, message: error.message, type: errorType(error.code), ...(error.metadata && { metadata: error.metadata }) } });
    return out;
  }

  const answeredBy = (model: string) => void (base.model = model);
  return { answeredBy, start, push, complete, fail };
}

/** One chunk (or the `[DONE]` marker) on the wire. */
export function encodeChatSse(chunk: ChatCompletionChunk | ChatErrorChunk | typeof CHAT_STREAM_DONE): string {
  return `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`;
}
