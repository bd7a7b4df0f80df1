/**
 * POST /v1/responses body → canonical `TextRequest` (without the upstream model name, which routing decides).
 * https://platform.openai.com/docs/api-reference/responses/create
 */
import { AppError } from '../errors/app-error';
import type { FunctionTool, InputContentPart, InputItem, TextFormat, ToolChoice } from '../providers/provider.types';
import type {
  ResponsesBody,
  ResponsesContentPart,
  ResponsesInputItem,
  ResponsesTextFormat,
  ResponsesTool,
  ResponsesToolChoice,
} from '../schemas/responses.schema';
import { canonicalReasoning, finishTextRequest, type CanonicalTextRequest } from './format-utils';

/** The include value that asks for output log-probabilities in the Responses API. */
export const LOGPROBS_INCLUDE = 'message.output_text.logprobs';
/** The include value that asks for the reasoning itself, encrypted, in reasoning items. */
export const ENCRYPTED_REASONING_INCLUDE = 'reasoning.encrypted_content';

/** Stored items that `item_reference` input items name, by id (the route looks them up). */
export type ItemReferences = ReadonlyMap<string, readonly InputItem[]>;

/**
 * @param history the stored conversation of `previous_response_id` (its input and output items), put before
 *   this request's input. Instructions are not carried over, as in OpenAI's API.
 * @param references what each `item_reference` stands for, in place of the reference.
 * @throws AppError 400 when there is no input at all (no `input` and no history), or a reference is unknown.
 */
export function responsesToCanonical(body: ResponsesBody, history: readonly InputItem[] = [], references: ItemReferences = new Map()): CanonicalTextRequest {
  const warnings: string[] = [];
  // The history, then this request's input: a string is one user message; an `item_reference` stands for what it names.
  const input = [...history];
  if (typeof body.input === 'string') {
    input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: body.input }] });
  } else {
    for (const [i, item] of (body.input ?? []).entries()) {
      if (item.type === 'item_reference') {
        const found = references.get(item.id);
        if (!found) throw AppError.validation([{ path: `/input/${i}/id`, message: `no stored item '${item.id}'` }], `Item reference '${item.id}' not found`);
        input.push(...found);
      } else {
        const mapped = toInputItem(item, warnings);
        if (mapped) input.push(mapped);
      }
    }
  }
  if (input.length === 0) throw AppError.validation([{ path: '/input', message: 'must not be empty' }]);

  const req: CanonicalTextRequest = { input, stream: body.stream === true, requestedParameters: [], warnings };
  if (body.instructions != null && body.instructions !== '') req.instructions = body.instructions;

  const tools = body.tools?.length ? toFunctionTools(body.tools, warnings) : [];
  const choice = body.tool_choice === undefined ? undefined : toToolChoice(body.tool_choice, warnings);
  const allowed = choice?.allowed;
  const usable = allowed ? tools.filter((t) => allowed.has(t.name)) : tools;
  if (usable.length > 0) req.tools = usable;
  if (choice?.choice !== undefined) req.toolChoice = choice.choice;
  if (body.parallel_tool_calls != null) req.parallelToolCalls = body.parallel_tool_calls;

  if (body.max_output_tokens != null) req.maxOutputTokens = body.max_output_tokens;
  if (body.temperature != null) req.temperature = body.temperature;
  if (body.top_p != null) req.topP = body.top_p;
  if (body.top_k != null) req.topK = body.top_k;
  if (body.presence_penalty != null) req.presencePenalty = body.presence_penalty;
  if (body.frequency_penalty != null) req.frequencyPenalty = body.frequency_penalty;

  if (body.reasoning) {
    const reasoning = canonicalReasoning(body.reasoning);
    if (reasoning) req.reasoning = reasoning;
  }
  if (body.text?.format) req.textFormat = toTextFormat(body.text.format);
  if (body.text?.verbosity != null) req.verbosity = body.text.verbosity;
  // Encrypted reasoning comes back only from an upstream Responses API (docs/clients.md "Upstream fidelity").
  const include = (body.include ?? []).filter((i) => i === ENCRYPTED_REASONING_INCLUDE);
  if (include.length > 0) req.include = include;

  // Responses asks for log-probabilities with `include`; `top_logprobs` alone implies them too.
  return finishTextRequest(req, body, (body.include ?? []).includes(LOGPROBS_INCLUDE) || body.top_logprobs != null);
}

/** Every `item_reference` id of an input, in order, once each. */
export function itemReferenceIds(input: ResponsesBody['input']): string[] {
  if (input === undefined || typeof input === 'string') return [];
  return [...new Set(input.flatMap((i) => (i.type === 'item_reference' ? [i.id] : [])))];
}

function toInputItem(item: Exclude<ResponsesInputItem, { type: 'item_reference' }>, warnings: string[]): InputItem | undefined {
  switch (item.type) {
    case undefined:
    case 'message': {
      const content =
        typeof item.content === 'string'
          ? [item.role === 'assistant' ? { type: 'output_text' as const, text: item.content } : { type: 'input_text' as const, text: item.content }]
          : item.content.map(toContentPart);
      return { type: 'message', role: item.role, content };
    }
    case 'function_call':
      return { type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments };
    case 'function_call_output':
      return { type: 'function_call_output', call_id: item.call_id, output: outputText(item.output, warnings) };
    case 'reasoning': {
      // Earlier reasoning given back (a replay of `response.output`): to an upstream Responses API as given, elsewhere
      // left out with a warning (the adapters'). An item with neither a summary nor encrypted reasoning carries nothing.
      const summary = item.summary.map((s) => ({ type: 'summary_text' as const, text: s.text }));
      if (summary.length === 0 && item.encrypted_content == null) return undefined;
      return { type: 'reasoning', summary, ...(item.encrypted_content != null && { encrypted_content: item.encrypted_content }) };
    }
  }
}

function toContentPart(part: ResponsesContentPart): InputContentPart {
  switch (part.type) {
    case 'input_text':
      return { type: 'input_text', text: part.text };
    case 'input_image':
      return { type: 'input_image', image_url: part.image_url, ...(part.detail !== undefined && { detail: part.detail }) };
    case 'input_file':
      return {
        type: 'input_file',
        ...(part.file_data !== undefined && { file_data: part.file_data }),
        ...(part.file_url !== undefined && { file_url: part.file_url }),
        ...(part.filename !== undefined && { filename: part.filename }),
      };
    case 'output_text':
      return { type: 'output_text', text: part.text };
    case 'refusal':
      return { type: 'output_text', text: part.refusal };
  }
}

/** A tool's output as a string: text parts joined; other parts cannot reach a provider as a tool result. */
function outputText(output: string | ResponsesContentPart[], warnings: string[]): string {
  if (typeof output === 'string') return output;
  const texts: string[] = [];
  for (const part of output) {
    if (part.type === 'input_text' || part.type === 'output_text') texts.push(part.text);
    else warnings.push(`function_call_output part of type '${part.type}' is not supported and was ignored`);
  }
  return texts.join('');
}

function toFunctionTools(tools: readonly ResponsesTool[], warnings: string[]): FunctionTool[] {
  const out: FunctionTool[] = [];
  for (const t of tools) {
    if (t.type !== 'function') {
      warnings.push(`tool type '${t.type}' is not supported and was ignored`);
      continue;
    }
    const f = t as Extract<ResponsesTool, { type: 'function'; name: string }>;
    const tool: FunctionTool = { type: 'function', name: f.name };
    if (f.description != null) tool.description = f.description;
    if (f.parameters != null) tool.parameters = f.parameters;
    if (f.strict != null) tool.strict = f.strict;
    out.push(tool);
  }
  return out;
}

/** `allowed_tools` narrows the tools to the named functions and becomes its `mode`. */
function toToolChoice(
  choice: ResponsesToolChoice,
  warnings: string[],
): { choice?: ToolChoice; allowed?: ReadonlySet<string> } | undefined {
  if (typeof choice === 'string') return { choice: choice as 'auto' | 'none' | 'required' };
  if (choice.type === 'function') return { choice: { type: 'function', name: (choice as { name: string }).name } };
  if (choice.type === 'allowed_tools') {
    const c = choice as Extract<ResponsesToolChoice, { type: 'allowed_tools'; mode: string }>;
    const names = c.tools.filter((t) => t.type === 'function' && typeof t.name === 'string').map((t) => t.name as string);
    return { choice: c.mode, allowed: new Set(names) };
  }
  warnings.push(`tool_choice of type '${choice.type}' is not supported and was ignored`);
  return undefined;
}

function toTextFormat(format: ResponsesTextFormat): TextFormat {
  if (format.type !== 'json_schema') return { type: format.type };
  const out: TextFormat = { type: 'json_schema', name: format.name, schema: format.schema };
  if (format.strict != null) out.strict = format.strict;
  if (format.description !== undefined) out.description = format.description;
  return out;
}
