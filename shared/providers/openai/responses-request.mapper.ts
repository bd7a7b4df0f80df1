/**
 * Canonical text requests → OpenAI's Responses API, for endpoints the catalog marks `responsesApi`:
 * https://platform.openai.com/docs/api-reference/responses/create. It carries what chat completions cannot: reasoning
 * summaries, encrypted reasoning (`include`), `verbosity`. Nothing is stored upstream (`store: false`): each call
 * carries its whole conversation, as with chat completions.
 */
import type { FunctionTool, HttpRequestSpec, InputContentPart, InputItem, TextRequest, ToolChoice } from '../provider.types';
import { leftOutWarning, replacedValueWarning } from '../model-family';
import { openaiEffort, openaiHeaders, sharedOptions, verbosityOf } from './request.mapper';

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
    body.tools = tools.map(toTool);
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  if (req.toolChoice !== undefined) body.tool_choice = toToolChoice(req.toolChoice);
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
  const reasoning: Record<string, unknown> = {};
  const effort = openaiEffort(req, warnings);
  if (effort !== undefined) reasoning.effort = effort;
  if (req.reasoning?.summary !== undefined && req.reasoning.enabled !== false) reasoning.summary = req.reasoning.summary;
  if (Object.keys(reasoning).length > 0) body.reasoning = reasoning;
  const text = textOptions(req, warnings);
  if (text) body.text = text;
  const include = new Set(req.include ?? []);
  if (req.logprobs || (req.topLogprobs ?? 0) > 0) {
    include.add(LOGPROBS_INCLUDE);
    if (req.topLogprobs !== undefined) body.top_logprobs = req.topLogprobs;
  }
  if (include.size > 0) body.include = [...include];
  Object.assign(body, sharedOptions(req));
  if (req.stream) body.stream = true;
  return { method: 'POST', path: '/responses', headers: openaiHeaders(apiKey, req.stream), body, ...(warnings.length > 0 && { warnings }) };
}

/** `text`: the output format and the verbosity (which the Responses API keeps there). */
function textOptions(req: TextRequest, warnings: string[]): Record<string, unknown> | undefined {
  const text: Record<string, unknown> = {};
  const f = req.textFormat;
  if (f && f.type !== 'text') {
    text.format =
      f.type === 'json_object'
        ? { type: 'json_object' }
        : { type: 'json_schema', name: f.name, schema: f.schema, ...(f.strict !== undefined && { strict: f.strict }), ...(f.description !== undefined && { description: f.description }) };
  }
  const verbosity = verbosityOf(req, warnings);
  if (verbosity !== undefined) text.verbosity = verbosity;
  return Object.keys(text).length > 0 ? text : undefined;
}

function toTool(t: FunctionTool): Record<string, unknown> {
  // `strict` and `parameters` are required (nullable): strict false unless asked, as chat completions' default.
  return { type: 'function', name: t.name, ...(t.description !== undefined && { description: t.description }), parameters: t.parameters ?? { type: 'object', properties: {} }, strict: t.strict ?? false };
}

function toToolChoice(choice: ToolChoice): unknown {
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
