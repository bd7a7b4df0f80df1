/**
 * Canonical requests → OpenAI wire format. Text goes to Chat Completions, the API every OpenAI-compatible
 * server speaks: https://platform.openai.com/docs/api-reference/chat/create
 */
import type { ImageRequest } from '../adapter.types';
import type { EmbeddingRequest, HttpRequestSpec, InputContentPart, InputItem, TextRequest, ToolChoice, FunctionTool } from '../provider.types';
import { unsupported, earlierReasoningLeftOut, familyOf, leftOutWarning, replacedValueWarning } from '../mapper-utils';
import { EFFORT_ORDER, OPENAI_MODEL_RULES, type OpenAIEffort } from './model-rules';

type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: 'low' | 'high' | 'auto' } }
  | { type: 'file'; file: { file_data?: string; filename?: string } };

interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ChatContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export function openaiHeaders(apiKey: string, stream = false): Record<string, string> {
  return {
    authorization: `Bearer ${apiKey}`,
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
  };
}

/** The fields chat completions and the Responses API name alike (ours, theirs): the end user's ids, the cache key, the service tier. */
const SHARED_OPTIONS: ReadonlyArray<[keyof TextRequest, string]> = [
  ['user', 'user'],
  ['safetyIdentifier', 'safety_identifier'],
  ['promptCacheKey', 'prompt_cache_key'],
  ['serviceTier', 'service_tier'],
];

export function buildChatCompletionRequest(req: TextRequest, apiKey: string): HttpRequestSpec {
  const warnings: string[] = [];
  earlierReasoningLeftOut(req, warnings);
  const messages: ChatMessage[] = req.instructions ? [{ role: 'system', content: req.instructions }] : [];
  for (const item of req.input) appendItem(messages, item);
  const body: Record<string, unknown> = { model: req.model, messages };
  const tools = req.tools ?? [];
  if (tools.length > 0) {
    body.tools = tools.map((t) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description !== undefined && { description: t.description }),
        ...(t.parameters !== undefined && { parameters: t.parameters }),
        ...(t.strict !== undefined && { strict: t.strict }),
      },
    }));
    // OpenAI refuses `parallel_tool_calls` without `tools`.
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  if (req.toolChoice !== undefined) body.tool_choice = toChatToolChoice(req.toolChoice);
  if (req.maxOutputTokens !== undefined) body.max_completion_tokens = req.maxOutputTokens;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  // topK: Chat Completions has no such parameter (OpenAI answers 400 to unknown ones); routing checks `supports`.
  if (req.presencePenalty !== undefined) body.presence_penalty = req.presencePenalty;
  if (req.frequencyPenalty !== undefined) body.frequency_penalty = req.frequencyPenalty;
  if (req.stop !== undefined && req.stop.length > 0) body.stop = req.stop;
  if (req.seed !== undefined) body.seed = req.seed;
  const effort = req.reasoning ? openaiEffort(req, warnings) : undefined;
  if (effort !== undefined) body.reasoning_effort = effort;
  if (req.textFormat && req.textFormat.type !== 'text') {
    const f = req.textFormat;
    body.response_format =
      f.type === 'json_object'
        ? { type: 'json_object' }
        : {
            type: 'json_schema',
            json_schema: {
              name: f.name,
              schema: f.schema,
              ...(f.strict !== undefined && { strict: f.strict }),
              ...(f.description !== undefined && { description: f.description }),
            },
          };
  }
  if (req.logprobs || (req.topLogprobs ?? 0) > 0) {
    body.logprobs = true;
    if (req.topLogprobs !== undefined) body.top_logprobs = req.topLogprobs;
  }
  for (const [field, name] of SHARED_OPTIONS) if (req[field] !== undefined) body[name] = req[field];
  const verbosity = req.verbosity !== undefined ? verbosityOf(req, warnings) : undefined;
  if (verbosity !== undefined) body.verbosity = verbosity;
  if (req.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return { method: 'POST', path: '/chat/completions', headers: openaiHeaders(apiKey, req.stream), body, ...(warnings.length > 0 && { warnings }) };
}

/** The verbosity to send: the caller's, where the model takes one (model-rules.ts); else none, with a warning. */
export function verbosityOf(req: TextRequest, warnings: string[]): TextRequest['verbosity'] {
  if (req.verbosity === undefined) return undefined;
  const rules = familyOf(OPENAI_MODEL_RULES, req.model);
  if (!rules || rules.verbosity) return req.verbosity;
  warnings.push(leftOutWarning(`verbosity ${JSON.stringify(req.verbosity)}`, req.model, 'the model does not take verbosity'));
  return undefined;
}

/**
 * The effort to send (model-rules.ts): the caller's where the model takes it; else the nearest it does, upwards
 * (`minimal` → `low`; `none` → its least where it cannot stop reasoning), with a warning; `max` is the most the model
 * has. Nothing for a model that does not reason (with a warning) or for `none` on a model the table does not know.
 */
export function openaiEffort(req: TextRequest, warnings: string[]): OpenAIEffort | undefined {
  const r = req.reasoning;
  const asked: OpenAIEffort | undefined = r?.enabled === false ? 'none' : r?.effort === 'max' ? 'xhigh' : r?.effort;
  if (asked === undefined) return undefined;
  const rules = familyOf(OPENAI_MODEL_RULES, req.model);
  if (!rules) return asked === 'none' ? undefined : asked === 'xhigh' ? 'high' : asked;
  const efforts = rules.efforts;
  if (!efforts) {
    if (asked !== 'none') warnings.push(leftOutWarning('reasoning', req.model, 'the model does not reason'));
    return undefined;
  }
  if (efforts.includes(asked)) return asked;
  const most = efforts[efforts.length - 1] as OpenAIEffort;
  if (asked === 'xhigh') return most;
  const used = efforts.find((e) => EFFORT_ORDER.indexOf(e) > EFFORT_ORDER.indexOf(asked)) ?? most;
  warnings.push(replacedValueWarning('reasoning.effort', asked, used, req.model, asked === 'none' ? 'it cannot turn reasoning off' : undefined));
  return used;
}

function toChatToolChoice(choice: ToolChoice): unknown {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } };
}

/**
 * One input item onto the chat messages. Instructions (first) and system/developer messages become `system` messages
 * (`developer` is OpenAI-only; OpenAI treats `system` as `developer` for reasoning models). Function calls join the
 * assistant message before them.
 */
function appendItem(messages: ChatMessage[], item: InputItem): void {
  switch (item.type) {
    case 'message': {
      if (item.role === 'system' || item.role === 'developer') {
        messages.push({ role: 'system', content: textOf(item.content, '\n\n') });
      } else if (item.role === 'assistant') {
        messages.push({ role: 'assistant', content: textOf(item.content, '') });
      } else {
        // A lone text part goes as a plain string; other content as chat's parts.
        const only = item.content.length === 1 ? item.content[0] : undefined;
        const text = only?.type === 'input_text' || only?.type === 'output_text' ? only.text : undefined;
        messages.push({ role: 'user', content: text ?? userParts(item.content) });
      }
      return;
    }
    case 'function_call': {
      const call: ChatToolCall = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
      const last = messages[messages.length - 1];
      if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      return;
    }
    case 'function_call_output':
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: item.output });
      return;
    case 'reasoning': // chat completions have no place for it (earlierReasoningLeftOut)
      return;
  }
}

function textOf(parts: InputContentPart[], separator: string): string {
  return parts
    .map((p) => (p.type === 'input_text' || p.type === 'output_text' ? p.text : unsupported(`OpenAI: ${p.type} is only allowed in user messages`)))
    .join(separator);
}

function userParts(parts: InputContentPart[]): ChatContentPart[] {
  return parts.map((p): ChatContentPart => {
    switch (p.type) {
      case 'input_text':
      case 'output_text':
        return { type: 'text', text: p.text };
      case 'input_image':
        return { type: 'image_url', image_url: { url: p.image_url, ...(p.detail !== undefined && { detail: p.detail }) } };
      case 'input_file':
        // Chat Completions takes files inline only (file_data), not by URL.
        if (p.file_data === undefined) return unsupported('OpenAI chat completions: files must be sent as file_data, not file_url');
        return { type: 'file', file: { file_data: p.file_data, ...(p.filename !== undefined && { filename: p.filename }) } };
    }
  });
}

/** https://platform.openai.com/docs/api-reference/embeddings/create — always float; the gateway encodes base64 itself. */
export function buildEmbeddingRequest(req: EmbeddingRequest, apiKey: string): HttpRequestSpec {
  // Text inputs, or token arrays (`number[][]`); the gateway never mixes the two in one request. A multimodal block of
  // text parts only is its text (lines joined); one with an image is not for OpenAI.
  const input = req.inputs.map((i) => {
    if (i.type === 'text') return i.text;
    if (i.type === 'tokens') return i.tokens;
    const texts = i.content.flatMap((c) => (c.type === 'text' ? [c.text] : []));
    return texts.length === i.content.length ? texts.join('\n') : unsupported('OpenAI embeddings take no images: text or token inputs only');
  });
  const body: Record<string, unknown> = { model: req.model, input, encoding_format: 'float' };
  if (req.dimensions !== undefined) body.dimensions = req.dimensions;
  if (req.user !== undefined) body.user = req.user;
  return { method: 'POST', path: '/embeddings', headers: openaiHeaders(apiKey), body };
}

/** https://platform.openai.com/docs/api-reference/images/create */
export function buildImageRequest(req: ImageRequest, apiKey: string): HttpRequestSpec {
  const body: Record<string, unknown> = { model: req.model, prompt: req.prompt };
  const optional: Array<[string, unknown]> = [
    ['n', req.n],
    ['size', req.size],
    ['quality', req.quality],
    ['style', req.style],
    ['background', req.background],
    ['output_format', req.outputFormat],
    ['output_compression', req.outputCompression],
    ['response_format', req.responseFormat],
    ['user', req.user],
  ];
  for (const [name, value] of optional) if (value !== undefined) body[name] = value;
  return { method: 'POST', path: '/images/generations', headers: openaiHeaders(apiKey), body };
}

/**
 * Canonical text requests → OpenAI's Responses API, for endpoints the catalog marks `responsesApi`:
 * https://platform.openai.com/docs/api-reference/responses/create. It carries what chat completions cannot: reasoning
 * summaries, encrypted reasoning (`include`), `verbosity`. Nothing is stored upstream (`store: false`): each call
 * carries its whole conversation, as with chat completions.
 */

/** The smallest `max_output_tokens` the Responses API takes (CreateResponse in openai-openapi). */
export const MIN_OUTPUT_TOKENS = 16;

/** The `include` value that asks for output log-probabilities. */
const LOGPROBS_INCLUDE = 'message.output_text.logprobs';

/** Chat parameters the Responses API does not have: left out, with a warning (the catalog lists none of them for such an endpoint). */
const NOT_IN_RESPONSES: ReadonlyArray<[keyof TextRequest, string]> = [
  ['stop', 'stop'],
  ['seed', 'seed'],
  ['presencePenalty', 'presence_penalty'],
  ['frequencyPenalty', 'frequency_penalty'],
  ['topK', 'top_k'],
];

export function buildResponsesRequest(req: TextRequest, apiKey: string): HttpRequestSpec {
  const warnings: string[] = [];
  const body: Record<string, unknown> = { model: req.model, input: req.input.map(toInputItem), store: false };
  if (req.instructions) body.instructions = req.instructions;
  const tools = req.tools ?? [];
  if (tools.length > 0) {
    body.tools = tools.map(toResponsesTool);
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  if (req.toolChoice !== undefined) body.tool_choice = toResponsesToolChoice(req.toolChoice);
  if (req.maxOutputTokens !== undefined) {
    body.max_output_tokens = Math.max(MIN_OUTPUT_TOKENS, req.maxOutputTokens);
    if (req.maxOutputTokens < MIN_OUTPUT_TOKENS) warnings.push(replacedValueWarning('max_output_tokens', req.maxOutputTokens, MIN_OUTPUT_TOKENS, req.model, `the Responses API takes at least ${MIN_OUTPUT_TOKENS}`));
  }
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  for (const [field, name] of NOT_IN_RESPONSES) {
    const value = req[field];
    if (value !== undefined && !(Array.isArray(value) && value.length === 0)) warnings.push(leftOutWarning(name, req.model, "OpenAI's Responses API has no such parameter"));
  }
  if (req.reasoning) {
    const reasoning: Record<string, unknown> = {};
    const effort = openaiEffort(req, warnings);
    if (effort !== undefined) reasoning.effort = effort;
    if (req.reasoning.summary !== undefined && req.reasoning.enabled !== false) reasoning.summary = req.reasoning.summary;
    if (Object.keys(reasoning).length > 0) body.reasoning = reasoning;
  }
  // `text`: the output format and the verbosity (which the Responses API keeps there).
  const text: Record<string, unknown> = {};
  const f = req.textFormat;
  if (f && f.type !== 'text') {
    text.format =
      f.type === 'json_object'
        ? { type: 'json_object' }
        : { type: 'json_schema', name: f.name, schema: f.schema, ...(f.strict !== undefined && { strict: f.strict }), ...(f.description !== undefined && { description: f.description }) };
  }
  const verbosity = req.verbosity !== undefined ? verbosityOf(req, warnings) : undefined;
  if (verbosity !== undefined) text.verbosity = verbosity;
  if (Object.keys(text).length > 0) body.text = text;
  const include = new Set(req.include ?? []);
  if (req.logprobs || (req.topLogprobs ?? 0) > 0) {
    include.add(LOGPROBS_INCLUDE);
    if (req.topLogprobs !== undefined) body.top_logprobs = req.topLogprobs;
  }
  if (include.size > 0) body.include = [...include];
  for (const [field, name] of SHARED_OPTIONS) if (req[field] !== undefined) body[name] = req[field];
  if (req.stream) body.stream = true;
  return { method: 'POST', path: '/responses', headers: openaiHeaders(apiKey, req.stream), body, ...(warnings.length > 0 && { warnings }) };
}

function toResponsesTool(t: FunctionTool): Record<string, unknown> {
  // `strict` and `parameters` are required (nullable): strict false unless asked, as chat completions' default.
  return { type: 'function', name: t.name, ...(t.description !== undefined && { description: t.description }), parameters: t.parameters ?? { type: 'object', properties: {} }, strict: t.strict ?? false };
}

function toResponsesToolChoice(choice: ToolChoice): unknown {
  return typeof choice === 'string' ? choice : { type: 'function', name: choice.name };
}

/** Our input items are the Responses API's own; assistant text goes as an easy input message (its content a string), earlier reasoning as given. */
function toInputItem(item: InputItem): Record<string, unknown> {
  switch (item.type) {
    case 'message':
      if (item.role === 'assistant') return { type: 'message', role: 'assistant', content: item.content.map((p) => ('text' in p ? p.text : '')).join('') };
      return { type: 'message', role: item.role, content: item.content.map(toContentPart) };
    case 'function_call':
      return { type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments };
    case 'function_call_output':
      return { type: 'function_call_output', call_id: item.call_id, output: item.output };
    case 'reasoning':
      // Without an id: the encrypted content names the item it was issued for, our public item ids are not OpenAI's
      // (OpenAI refuses encrypted content under another id), and with `store: false` an id names nothing it can find.
      return { type: 'reasoning', summary: item.summary, ...(item.encrypted_content !== undefined && { encrypted_content: item.encrypted_content }) };
  }
}

function toContentPart(p: InputContentPart): Record<string, unknown> {
  switch (p.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'input_text', text: p.text };
    case 'input_image':
      return { type: 'input_image', image_url: p.image_url, detail: p.detail ?? 'auto' };
    case 'input_file':
      return {
        type: 'input_file',
        ...(p.file_data !== undefined && { file_data: p.file_data }),
        ...(p.file_url !== undefined && { file_url: p.file_url }),
        ...(p.filename !== undefined && { filename: p.filename }),
      };
  }
}
