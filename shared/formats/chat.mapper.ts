/**
 * POST /v1/chat/completions body → canonical `TextRequest` (without the upstream model name).
 * https://platform.openai.com/docs/api-reference/chat/create
 */
import type { FunctionTool, InputContentPart, InputItem, TextFormat, ToolChoice, FinishReason, TextResult } from '../providers/provider.types';
import type { ChatBody, ChatContentPart, ChatMessageParam, ChatResponseFormat, ChatToolChoice } from '../schemas/chat.schema';
import { AppError } from '../errors/app-error';
import { canonicalReasoning, finishTextRequest, type CanonicalTextRequest, publicLogprobs, type PublicLogprob, type ChatUsage } from './format-utils';

/**
 * System and developer messages before the first other message become `instructions` (joined by a blank
 * line); later ones stay in place as system/developer messages.
 * @throws AppError 400 when there are no messages.
 */
export function chatToCanonical(body: ChatBody): CanonicalTextRequest {
  const warnings: string[] = [];
  let instructions: string[] = [];
  let input: InputItem[] = [];
  for (const m of body.messages) {
    if ((m.role === 'system' || m.role === 'developer') && input.length === 0) instructions.push(textOf(m.content));
    else input.push(...toInputItems(m));
  }
  // Only system messages: keep them as messages (OpenAI answers such a request) rather than send no input.
  if (input.length === 0) {
    input = body.messages.flatMap(toInputItems);
    instructions = [];
  }
  if (input.length === 0) throw AppError.validation([{ path: '/messages', message: 'must not be empty' }]);

  const req: CanonicalTextRequest = { input, stream: body.stream === true, requestedParameters: [], warnings };
  const joined = instructions.filter((s) => s !== '').join('\n\n');
  if (joined) req.instructions = joined;

  const tools: FunctionTool[] = (body.tools ?? []).map((t) => {
    const tool: FunctionTool = { type: 'function', name: t.function.name };
    if (t.function.description !== undefined) tool.description = t.function.description;
    if (t.function.parameters !== undefined) tool.parameters = t.function.parameters;
    if (t.function.strict != null) tool.strict = t.function.strict;
    return tool;
  });
  const choice = body.tool_choice === undefined ? undefined : toToolChoice(body.tool_choice);
  const allowed = choice?.allowed;
  const usable = allowed ? tools.filter((t) => allowed.has(t.name)) : tools;
  if (usable.length > 0) req.tools = usable;
  if (choice) req.toolChoice = choice.choice;
  if (body.parallel_tool_calls != null) req.parallelToolCalls = body.parallel_tool_calls;

  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (maxTokens != null) req.maxOutputTokens = maxTokens;
  if (body.temperature != null) req.temperature = body.temperature;
  if (body.top_p != null) req.topP = body.top_p;
  if (body.top_k != null) req.topK = body.top_k;
  if (body.presence_penalty != null) req.presencePenalty = body.presence_penalty;
  if (body.frequency_penalty != null) req.frequencyPenalty = body.frequency_penalty;
  const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (stop.length > 0) req.stop = [...stop];
  if (body.seed != null) req.seed = body.seed;

  if (body.reasoning != null || body.reasoning_effort != null) {
    const reasoning = canonicalReasoning({ ...body.reasoning, effort: body.reasoning?.effort ?? body.reasoning_effort ?? null });
    if (reasoning) req.reasoning = reasoning;
  }
  if (body.response_format) req.textFormat = toTextFormat(body.response_format);
  if (body.verbosity != null) req.verbosity = body.verbosity;

  return finishTextRequest(req, body, body.logprobs === true);
}

type TextParts = string | Array<{ type: 'text'; text: string } | { type: 'refusal'; refusal: string }> | null | undefined;

function textOf(content: TextParts): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' ? p.text : p.refusal)).join('');
}

function toInputItems(m: ChatMessageParam): InputItem[] {
  switch (m.role) {
    case 'system':
    case 'developer':
      return [{ type: 'message', role: m.role, content: [{ type: 'input_text', text: textOf(m.content) }] }];
    case 'user': {
      const content = typeof m.content === 'string' ? [{ type: 'input_text' as const, text: m.content }] : m.content.map(toContentPart);
      return [{ type: 'message', role: 'user', content }];
    }
    case 'assistant': {
      const out: InputItem[] = [];
      const text = textOf(m.content) || (m.refusal ?? '');
      if (text !== '') out.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
      for (const call of m.tool_calls ?? []) {
        out.push({ type: 'function_call', call_id: call.id, name: call.function.name, arguments: call.function.arguments });
      }
      return out;
    }
    case 'tool':
      return [{ type: 'function_call_output', call_id: m.tool_call_id, output: textOf(m.content) }];
  }
}

function toContentPart(part: ChatContentPart): InputContentPart {
  switch (part.type) {
    case 'text':
      return { type: 'input_text', text: part.text };
    case 'image_url':
      return {
        type: 'input_image',
        image_url: part.image_url.url,
        ...(part.image_url.detail !== undefined && { detail: part.image_url.detail }),
      };
    case 'file':
      return {
        type: 'input_file',
        file_data: part.file.file_data,
        ...(part.file.filename !== undefined && { filename: part.file.filename }),
      };
  }
}

function toToolChoice(choice: ChatToolChoice): { choice: ToolChoice; allowed?: ReadonlySet<string> } {
  if (typeof choice === 'string') return { choice };
  if (choice.type === 'function') return { choice: { type: 'function', name: choice.function.name } };
  return { choice: choice.allowed_tools.mode, allowed: new Set(choice.allowed_tools.tools.map((t) => t.function.name)) };
}

function toTextFormat(format: ChatResponseFormat): TextFormat {
  if (format.type !== 'json_schema') return { type: format.type };
  const s = format.json_schema;
  const out: TextFormat = { type: 'json_schema', name: s.name, schema: s.schema ?? {} };
  if (s.strict != null) out.strict = s.strict;
  if (s.description !== undefined) out.description = s.description;
  return out;
}

/**
 * Canonical result → OpenAI's chat completion object
 * (https://platform.openai.com/docs/api-reference/chat/object), plus the `switchyard` extension.
 */

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
