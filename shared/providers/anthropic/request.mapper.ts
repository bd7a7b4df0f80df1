/** Canonical text requests → Anthropic Messages API. https://docs.anthropic.com/en/api/messages */
import type { TextMappingOptions } from '../adapter.types';
import { DEFAULT_MAX_OUTPUT_TOKENS, type HttpRequestSpec, type InputContentPart, type TextRequest, type ToolChoice } from '../provider.types';
import { parseDataUrl, parseJsonArguments, unsupported } from '../mapper-utils';
import { earlierReasoningLeftOut, familyOf, leftOutWarning, replacedValueWarning } from '../mapper-utils';
import { ANTHROPIC_MODEL_RULES, MIN_THINKING_BUDGET, NON_STREAMING_TOKENS_PER_HOUR, THINKING_BUDGET, THINKING_CONSTRAINTS } from './model-rules';

export const ANTHROPIC_VERSION = '2023-06-01';

type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string } }
  | {
      type: 'document';
      source: { type: 'base64'; media_type: string; data: string } | { type: 'text'; media_type: 'text/plain'; data: string } | { type: 'url'; url: string };
      title?: string;
    }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string };

export interface AnthropicMessage {
  /** `system`: a mid-conversation system message, where the model takes one (model-rules.ts). */
  role: 'user' | 'assistant' | 'system';
  content: ContentBlock[];
}

export function anthropicHeaders(apiKey: string, stream = false): Record<string, string> {
  return {
    'x-api-key': apiKey,
    'anthropic-version': ANTHROPIC_VERSION,
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
  };
}

export function buildMessagesRequest(req: TextRequest, apiKey: string, options: TextMappingOptions = {}): HttpRequestSpec {
  const warnings: string[] = [];
  const rules = familyOf(ANTHROPIC_MODEL_RULES, req.model);
  earlierReasoningLeftOut(req, warnings);
  const { system, messages } = toMessages(req, rules?.midConversationSystem === true, warnings);
  if (messages.length === 0) return unsupported('Anthropic needs at least one user or assistant message; this conversation has only system messages');
  const tools = req.tools ?? [];
  const thinking = thinkingOf(req, tools.length > 0, options, warnings);

  const body: Record<string, unknown> = { model: req.model, max_tokens: thinking.maxTokens, messages };
  if (system) body.system = system;
  if (thinking.budget !== undefined) body.thinking = { type: 'enabled', budget_tokens: thinking.budget };
  const thinkingOn = thinking.budget !== undefined;
  const why = 'Anthropic does not allow it together with extended thinking (reasoning)';
  if (req.temperature !== undefined && thinkingOn && req.temperature !== THINKING_CONSTRAINTS.temperature) warnings.push(leftOutWarning(`temperature ${req.temperature}`, req.model, why));
  else if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined && thinkingOn && req.topP < THINKING_CONSTRAINTS.minTopP) warnings.push(leftOutWarning(`top_p ${req.topP}`, req.model, `${why} below ${THINKING_CONSTRAINTS.minTopP}`));
  else if (req.topP !== undefined) body.top_p = req.topP;
  if (req.topK !== undefined && thinkingOn) warnings.push(leftOutWarning(`top_k ${req.topK}`, req.model, why));
  else if (req.topK !== undefined) body.top_k = req.topK;
  if (req.stop !== undefined && req.stop.length > 0) body.stop_sequences = req.stop;
  if (tools.length > 0) {
    body.tools = tools.map((t) => ({
      name: t.name,
      ...(t.description !== undefined && { description: t.description }),
      input_schema: t.parameters ?? { type: 'object', properties: {} },
    }));
  }
  const toolChoice = toToolChoice(req.toolChoice, tools.length > 0 ? req.parallelToolCalls : undefined);
  if (toolChoice) body.tool_choice = toolChoice;
  // `metadata.user_id` is Anthropic's id of the end user for abuse detection: the safety identifier where there is one.
  const userId = req.safetyIdentifier ?? req.user;
  if (userId !== undefined) body.metadata = { user_id: userId };
  if (req.stream) body.stream = true;
  // Not mapped (no Messages API equivalent): seed, penalties, logprobs, textFormat, promptCacheKey.
  return { method: 'POST', path: '/messages', headers: anthropicHeaders(apiKey, req.stream), body, ...(warnings.length > 0 && { warnings }) };
}

/**
 * `max_tokens` and the thinking budget. Without a limit of its own a call gets the endpoint's, except a non-streaming
 * one, which gets no more than fits in the provider's timeout (NON_STREAMING_TOKENS_PER_HOUR; at least
 * DEFAULT_MAX_OUTPUT_TOKENS), and thinks on at most
 * half of it. With the caller's limit the budget stays below it. A budget below Anthropic's minimum, or a forced tool
 * choice (which thinking forbids), answers without thinking, with a warning.
 */
function thinkingOf(req: TextRequest, hasTools: boolean, options: TextMappingOptions, warnings: string[]): { maxTokens: number; budget?: number } {
  const endpointMax = options.defaultMaxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
  const timed = !req.stream && options.timeoutMs !== undefined && req.maxOutputTokens === undefined;
  // Never below the default a request without a limit is sized for (a short timeout is the operator's to set right).
  const inTime = Math.max(DEFAULT_MAX_OUTPUT_TOKENS, Math.floor(((options.timeoutMs ?? 0) * NON_STREAMING_TOKENS_PER_HOUR) / 3_600_000));
  const fitting = timed ? Math.min(endpointMax, inTime) : endpointMax;
  const maxTokens = req.maxOutputTokens ?? fitting;
  let budget = thinkingBudgetOf(req);
  if (budget === undefined) return { maxTokens };
  const forced = hasTools && (req.toolChoice === 'required' || typeof req.toolChoice === 'object');
  if (forced) {
    warnings.push(leftOutWarning('reasoning', req.model, 'Anthropic does not allow extended thinking with a forced tool choice (tool_choice required or a named function)'));
    return { maxTokens };
  }
  const asked = budget;
  budget = req.maxOutputTokens === undefined ? Math.min(budget, Math.floor(maxTokens / 2)) : Math.min(budget, maxTokens - 1);
  if (budget < MIN_THINKING_BUDGET) {
    warnings.push(leftOutWarning('reasoning', req.model, `its output limit (${maxTokens} tokens) leaves no room for Anthropic's smallest thinking budget (${MIN_THINKING_BUDGET})`));
    return { maxTokens };
  }
  if (req.reasoning?.maxTokens !== undefined && budget !== asked) warnings.push(replacedValueWarning('reasoning.max_tokens', asked, budget, req.model, 'the thinking budget must fit below the output limit'));
  return { maxTokens, budget };
}

function thinkingBudgetOf(req: TextRequest): number | undefined {
  const r = req.reasoning;
  if (!r || r.enabled === false) return undefined;
  if (r.maxTokens !== undefined) return Math.max(MIN_THINKING_BUDGET, r.maxTokens);
  if (r.effort !== undefined) return THINKING_BUDGET.get(r.effort);
  return r.enabled ? THINKING_BUDGET.get('medium') : undefined;
}

/** https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#controlling-claudes-output */
function toToolChoice(choice: ToolChoice | undefined, parallel: boolean | undefined): Record<string, unknown> | undefined {
  const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined) return parallel === false ? { type: 'auto', ...noParallel } : undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto', ...noParallel };
  if (choice === 'required') return { type: 'any', ...noParallel };
  return { type: 'tool', name: choice.name, ...noParallel };
}

/**
 * System and developer messages before the conversation go to `system`. Later ones stay in place as `system` messages
 * where the model takes them (`midConversationSystem`); elsewhere they join `system` too, with a warning (the model
 * then reads them before the conversation, not at their place in it). Consecutive blocks of one role share a message:
 * parallel tool results must sit in ONE user message right after the assistant's tool_use message.
 */
export function toMessages(req: TextRequest, midConversationSystem = false, warnings: string[] = []): { system: string; messages: AnthropicMessage[] } {
  const system: string[] = req.instructions ? [req.instructions] : [];
  const messages: AnthropicMessage[] = [];
  const push = (role: AnthropicMessage['role'], blocks: ContentBlock[]): void => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  let moved = false;
  for (const item of req.input) {
    switch (item.type) {
      case 'message':
        if (item.role === 'system' || item.role === 'developer') {
          const text = item.content.map((p) => textPart(p)).join('\n\n');
          if (messages.length > 0 && midConversationSystem) push('system', [{ type: 'text', text }]);
          else {
            moved ||= messages.length > 0;
            system.push(text);
          }
        } else push(item.role, item.content.map(toBlock));
        break;
      case 'function_call':
        push('assistant', [{ type: 'tool_use', id: item.call_id, name: item.name, input: parseJsonArguments(item.arguments, `function_call ${item.call_id}`) }]);
        break;
      case 'function_call_output':
        push('user', [{ type: 'tool_result', tool_use_id: item.call_id, content: item.output }]);
        break;
      case 'reasoning': // another provider's; Anthropic takes only its own signed thinking (earlierReasoningLeftOut)
        break;
    }
  }
  if (moved) warnings.push(`A system message in the middle of the conversation was moved to the system prompt: ${req.model} takes system instructions only before the conversation`);
  return { system: system.join('\n\n'), messages };
}

/** `Base64ImageSource.media_type` (anthropic-sdk-typescript messages.ts). */
const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

function textPart(p: InputContentPart): string {
  return p.type === 'input_text' || p.type === 'output_text' ? p.text : unsupported(`Anthropic: ${p.type} is not allowed in a system message`);
}

function toBlock(p: InputContentPart): ContentBlock {
  switch (p.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: p.text };
    case 'input_image': {
      const data = parseDataUrl(p.image_url);
      if (data && !IMAGE_TYPES.has(data.mimeType)) return unsupported(`Anthropic takes images of type ${[...IMAGE_TYPES].join(', ')}, not ${data.mimeType}`);
      return { type: 'image', source: data ? { type: 'base64', media_type: data.mimeType, data: data.base64 } : { type: 'url', url: p.image_url } };
    }
    case 'input_file': {
      const title = p.filename !== undefined ? { title: p.filename } : {};
      if (p.file_data !== undefined) {
        // file_data is a data: URL in the Responses API; bare base64 is taken as PDF, the one type Anthropic documents.
        const data = parseDataUrl(p.file_data) ?? { mimeType: 'application/pdf', base64: p.file_data };
        if (data.mimeType === 'text/plain') return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: Buffer.from(data.base64, 'base64').toString('utf8') }, ...title };
        if (data.mimeType !== 'application/pdf') return unsupported(`Anthropic takes documents of type application/pdf or text/plain, not ${data.mimeType}`);
        return { type: 'document', source: { type: 'base64', media_type: data.mimeType, data: data.base64 }, ...title };
      }
      if (p.file_url !== undefined) return { type: 'document', source: { type: 'url', url: p.file_url }, ...title };
      return unsupported('Anthropic: input_file needs file_data or file_url');
    }
  }
}
