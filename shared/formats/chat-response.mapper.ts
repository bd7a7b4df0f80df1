/**
 * Canonical result → OpenAI's chat completion object
 * (https://platform.openai.com/docs/api-reference/chat/object), plus the `switchyard` extension.
 */
import type { FinishReason, TextResult } from '../providers/provider.types';
import { publicLogprobs, type PublicLogprob } from './format-utils';
import type { ChatUsage } from './usage.mapper';

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error';

/** Canonical → chat `finish_reason`. `error` is OpenRouter's value for an answer ended by an upstream error. */
export const CHAT_FINISH_REASONS: ReadonlyMap<FinishReason, ChatFinishReason> = new Map([
  ['stop', 'stop'],
  ['length', 'length'],
  ['tool_calls', 'tool_calls'],
  ['content_filter', 'content_filter'],
  ['error', 'error'],
] as const);

export interface ChatMessageToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    message: {
      role: 'assistant';
      content: string | null;
      refusal: null;
      tool_calls?: ChatMessageToolCall[];
      /** Reasoning text, when the model reported it (OpenRouter's field; the SDK passes it through). */
      reasoning?: string;
    };
    logprobs: { content: PublicLogprob[]; refusal: null } | null;
    finish_reason: ChatFinishReason;
  }>;
  usage: ChatUsage;
  /** The processing tier the provider says served it (OpenAI's `service_tier`), null from a provider that says none. */
  service_tier: string | null;
  switchyard: Record<string, unknown>;
}

export interface ChatCompletionInput {
  id: string;
  /** Unix seconds. */
  created: number;
  /** Public model id that answered. */
  model: string;
  result: TextResult;
  usage: ChatUsage;
  /** The request asked for log-probabilities: `logprobs` is an object even when the provider returned none. */
  logprobs?: boolean;
  warnings?: string[];
  switchyard?: Record<string, unknown>;
}

export function chatFinishReason(reason: FinishReason | undefined): ChatFinishReason {
  return (reason && CHAT_FINISH_REASONS.get(reason)) ?? 'stop';
}

export function buildChatCompletion(a: ChatCompletionInput): ChatCompletion {
  const texts: string[] = [];
  const reasoning: string[] = [];
  const toolCalls: ChatMessageToolCall[] = [];
  for (const item of a.result.output) {
    if (item.type === 'message') texts.push(...item.content.map((c) => c.text));
    else if (item.type === 'reasoning') reasoning.push(...item.summary.map((s) => s.text));
    else toolCalls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } });
  }
  const message: ChatCompletion['choices'][number]['message'] = {
    role: 'assistant',
    content: texts.length > 0 ? texts.join('') : null,
    refusal: null,
  };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (reasoning.length > 0) message.reasoning = reasoning.join('');
  const logprobs = a.result.logprobs || a.logprobs ? { content: publicLogprobs(a.result.logprobs ?? []), refusal: null } : null;
  const switchyard: Record<string, unknown> = { ...a.switchyard };
  if (a.warnings && a.warnings.length > 0) switchyard.warnings = [...a.warnings];
  return {
    id: a.id,
    object: 'chat.completion',
    created: a.created,
    model: a.model,
    choices: [{ index: 0, message, logprobs, finish_reason: chatFinishReason(a.result.finishReason) }],
    usage: a.usage,
    service_tier: a.result.serviceTier ?? null,
    switchyard,
  };
}
