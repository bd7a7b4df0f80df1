/**
 * POST /v1/chat/completions body → canonical `TextRequest` (without the upstream model name).
 * https://platform.openai.com/docs/api-reference/chat/create
 */
import type { FunctionTool, InputContentPart, InputItem, TextFormat, ToolChoice } from '../providers/provider.types';
import type { ChatBody, ChatContentPart, ChatMessageParam, ChatResponseFormat, ChatToolChoice } from '../schemas/chat.schema';
import { AppError } from '../errors/app-error';
import { canonicalReasoning, finishTextRequest, type CanonicalTextRequest } from './format-utils';

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

  const reasoning = canonicalReasoning(
    body.reasoning != null || body.reasoning_effort != null
      ? { ...body.reasoning, effort: body.reasoning?.effort ?? body.reasoning_effort ?? null }
      : undefined,
  );
  if (reasoning) req.reasoning = reasoning;
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
