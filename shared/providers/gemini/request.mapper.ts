/**
 * Canonical requests → Gemini API (generativelanguage.googleapis.com/v1beta).
 * https://ai.google.dev/api/generate-content and https://ai.google.dev/api/embeddings
 */
import type { EmbeddingRequest, HttpRequestSpec, InputContentPart, TextRequest, ToolChoice } from '../provider.types';
import { mimeTypeFromUrl, parseDataUrl, parseJsonArguments, unsupported } from '../mapper-utils';
import { earlierReasoningLeftOut, familyOf, leftOutWarning, replacedValueWarning } from '../mapper-utils';
import { GEMINI_MODEL_RULES, THINKING_BUDGET } from './model-rules';
import { toGeminiSchema } from './schema.mapper';

export { toGeminiSchema };

export type GeminiPart =
  | { text: string; thought?: boolean }
  | { inlineData: { mimeType: string; data: string } }
  | { fileData: { fileUri: string; mimeType?: string } }
  | { functionCall: { name: string; args: Record<string, unknown> }; thoughtSignature?: string }
  | { functionResponse: { name: string; response: Record<string, unknown> } };

export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

/** https://ai.google.dev/gemini-api/docs/function-calling#function_calling_modes */
const FUNCTION_CALLING_MODE: ReadonlyMap<string, string> = new Map([
  ['auto', 'AUTO'],
  ['none', 'NONE'],
  ['required', 'ANY'],
]);

/**
 * Gemini 3 refuses replayed function calls without a thought signature; we keep none, so we send the value
 * Google documents for conversations that did not come from Gemini.
 * https://ai.google.dev/gemini-api/docs/thought-signatures
 */
const FOREIGN_THOUGHT_SIGNATURE = 'skip_thought_signature_validator';

export function geminiHeaders(apiKey: string, stream = false): Record<string, string> {
  return { 'x-goog-api-key': apiKey, 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json' };
}

/** `gemini-2.5-flash` → `models/gemini-2.5-flash`; `models/x` and `tunedModels/x` stay as they are. */
export function geminiModelResource(model: string): string {
  return model.includes('/') ? model : `models/${model}`;
}

export function buildGenerateContentRequest(req: TextRequest, apiKey: string): HttpRequestSpec {
  const warnings: string[] = [];
  earlierReasoningLeftOut(req, warnings);
  const { systemInstruction, contents } = toContents(req, warnings);
  if (contents.length === 0) return unsupported('Gemini needs at least one user or model message; this conversation has only system messages');
  const body: Record<string, unknown> = { contents };
  if (systemInstruction) body.systemInstruction = { parts: [{ text: systemInstruction }] };
  const tools = req.tools ?? [];
  if (tools.length > 0) {
    body.tools = [
      {
        functionDeclarations: tools.map((t) => ({
          name: t.name,
          ...(t.description !== undefined && { description: t.description }),
          ...(t.parameters !== undefined && { parameters: schemaOf(t.parameters, `the parameters of tool '${t.name}'`, t.strict === true, req.model, warnings) }),
        })),
      },
    ];
  }
  if (req.toolChoice !== undefined) body.toolConfig = { functionCallingConfig: toFunctionCallingConfig(req.toolChoice) };
  const config = generationConfig(req, warnings);
  if (Object.keys(config).length > 0) body.generationConfig = config;
  const resource = geminiModelResource(req.model);
  const path = req.stream ? `/${resource}:streamGenerateContent?alt=sse` : `/${resource}:generateContent`;
  return { method: 'POST', path, headers: geminiHeaders(apiKey, req.stream), body, ...(warnings.length > 0 && { warnings }) };
}

/** A JSON Schema as Gemini's `Schema`; what it cannot express is named in a warning (and `strict` is not enforced). */
function schemaOf(schema: Record<string, unknown>, where: string, strict: boolean, model: string, warnings: string[]): Record<string, unknown> {
  const { schema: out, dropped } = toGeminiSchema(schema);
  if (dropped.length > 0) warnings.push(leftOutWarning(`${dropped.join(', ')} in ${where}`, model, "Gemini's Schema cannot express it"));
  if (strict) warnings.push(`strict is not enforced by ${model}: ${where} guide the output but Gemini does not guarantee it matches them`);
  return out;
}

function toFunctionCallingConfig(choice: ToolChoice): Record<string, unknown> {
  if (typeof choice === 'string') return { mode: FUNCTION_CALLING_MODE.get(choice) ?? 'AUTO' };
  return { mode: 'ANY', allowedFunctionNames: [choice.name] };
}

/** https://ai.google.dev/api/generate-content#generationconfig */
function generationConfig(req: TextRequest, warnings: string[]): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  const direct: Array<[string, unknown]> = [
    ['temperature', req.temperature],
    ['topP', req.topP],
    ['topK', req.topK],
    ['maxOutputTokens', req.maxOutputTokens],
    ['presencePenalty', req.presencePenalty],
    ['frequencyPenalty', req.frequencyPenalty],
    ['seed', req.seed],
  ];
  for (const [name, value] of direct) if (value !== undefined) config[name] = value;
  if (req.stop !== undefined && req.stop.length > 0) config.stopSequences = req.stop;
  const format = req.textFormat;
  if (format && format.type !== 'text') {
    config.responseMimeType = 'application/json';
    if (format.type === 'json_schema') config.responseSchema = schemaOf(format.schema, `the response format '${format.name}'`, format.strict === true, req.model, warnings);
  }
  if (req.logprobs || (req.topLogprobs ?? 0) > 0) {
    config.responseLogprobs = true;
    if (req.topLogprobs !== undefined) config.logprobs = req.topLogprobs;
  }
  const thinking = thinkingConfig(req, warnings);
  if (thinking) config.thinkingConfig = thinking;
  return config;
}

/**
 * The thinking budget: an effort's budget, or the caller's, within the family's documented range (model-rules.ts);
 * off (0) where the family can turn thinking off, else its smallest budget, with a warning. A model that does not
 * think (or one the table does not know) gets the request's budget as it is.
 */
function thinkingConfig(req: TextRequest, warnings: string[]): Record<string, unknown> | undefined {
  const r = req.reasoning;
  if (!r) return undefined;
  const range = familyOf(GEMINI_MODEL_RULES, req.model);
  const limits = range?.thinkingBudget;
  if (range && !limits) {
    warnings.push(leftOutWarning('reasoning', req.model, 'the model does not think'));
    return undefined;
  }
  const config: Record<string, unknown> = {};
  const asked = r.enabled === false ? 0 : (r.maxTokens ?? (r.effort !== undefined ? THINKING_BUDGET.get(r.effort) : undefined));
  if (asked !== undefined) {
    const budget = limits ? budgetWithin(asked, limits) : asked;
    if (budget !== asked && (r.enabled === false || r.maxTokens !== undefined)) {
      const why = asked === 0 ? 'it cannot turn thinking off' : `it takes budgets from ${limits!.min} to ${limits!.max}`;
      warnings.push(replacedValueWarning(r.enabled === false ? 'reasoning.effort' : 'reasoning.max_tokens', r.enabled === false ? 'none' : asked, budget, req.model, why));
    }
    config.thinkingBudget = budget;
  }
  // Thought summaries only come back when asked for.
  if (r.enabled !== false && r.summary !== undefined && r.summary !== 'none') config.includeThoughts = true;
  return Object.keys(config).length > 0 ? config : undefined;
}

function budgetWithin(asked: number, limits: { min: number; max: number; canDisable: boolean }): number {
  if (asked === 0) return limits.canDisable ? 0 : limits.min;
  return Math.min(limits.max, Math.max(limits.min, asked));
}

/**
 * System and developer messages go to `systemInstruction` (Gemini has no system turn; one in the middle of the
 * conversation is moved there, with a warning); function calls are `model` parts, their outputs `user` parts named
 * after the call (Gemini matches responses by name). Consecutive parts of one role share a content, as parallel
 * function responses must.
 */
export function toContents(req: TextRequest, warnings: string[] = []): { systemInstruction: string; contents: GeminiContent[] } {
  const system: string[] = req.instructions ? [req.instructions] : [];
  const contents: GeminiContent[] = [];
  const callNames = new Map<string, string>();
  const push = (role: 'user' | 'model', parts: GeminiPart[]): void => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  let moved = false;
  for (const item of req.input) {
    switch (item.type) {
      case 'message':
        if (item.role === 'system' || item.role === 'developer') {
          moved ||= contents.length > 0;
          system.push(item.content.map(systemText).join('\n\n'));
        } else push(item.role === 'assistant' ? 'model' : 'user', item.content.map(toPart));
        break;
      case 'function_call':
        callNames.set(item.call_id, item.name);
        push('model', [
          { functionCall: { name: item.name, args: parseJsonArguments(item.arguments, `function_call ${item.call_id}`) }, thoughtSignature: FOREIGN_THOUGHT_SIGNATURE },
        ]);
        break;
      case 'function_call_output': {
        const name = callNames.get(item.call_id) ?? unsupported(`Gemini: function_call_output ${item.call_id} has no matching function_call`);
        push('user', [{ functionResponse: { name, response: functionResponse(item.output) } }]);
        break;
      }
      case 'reasoning': // Gemini takes no earlier reasoning (earlierReasoningLeftOut)
        break;
    }
  }
  if (moved) warnings.push(`A system message in the middle of the conversation was moved to the system instruction: ${req.model} takes system instructions only before the conversation`);
  return { systemInstruction: system.join('\n\n'), contents };
}

/** `response` must be an object; Google's docs put the function's result under `output`. */
function functionResponse(output: string): Record<string, unknown> {
  try {
    return { output: JSON.parse(output) as unknown };
  } catch {
    return { output };
  }
}

function systemText(p: InputContentPart): string {
  return p.type === 'input_text' || p.type === 'output_text' ? p.text : unsupported(`Gemini: ${p.type} is not allowed in a system message`);
}

function toPart(p: InputContentPart): GeminiPart {
  switch (p.type) {
    case 'input_text':
    case 'output_text':
      return { text: p.text };
    case 'input_image':
      return mediaPart(p.image_url);
    case 'input_file':
      if (p.file_data !== undefined) {
        const data = parseDataUrl(p.file_data) ?? { mimeType: 'application/pdf', base64: p.file_data };
        return { inlineData: { mimeType: data.mimeType, data: data.base64 } };
      }
      if (p.file_url !== undefined) return mediaPart(p.file_url);
      return unsupported('Gemini: input_file needs file_data or file_url');
  }
}

function mediaPart(url: string): GeminiPart {
  const data = parseDataUrl(url);
  if (data) return { inlineData: { mimeType: data.mimeType, data: data.base64 } };
  const mimeType = mimeTypeFromUrl(url);
  return { fileData: { fileUri: url, ...(mimeType !== undefined && { mimeType }) } };
}

// ---------- embeddings ----------

/** https://ai.google.dev/api/embeddings#method:-models.batchembedcontents */
export function buildBatchEmbedRequest(req: EmbeddingRequest, apiKey: string): HttpRequestSpec {
  const resource = geminiModelResource(req.model);
  const requests = req.inputs.map((input) => ({
    model: resource,
    content: {
      parts:
        input.type === 'text'
          ? [{ text: input.text }]
          : input.type === 'tokens'
            ? unsupported('Gemini embeddings take no token arrays')
            : input.content.map((c) => (c.type === 'text' ? { text: c.text } : mediaPart(c.url))),
    },
    ...(req.dimensions !== undefined && { outputDimensionality: req.dimensions }),
  }));
  return { method: 'POST', path: `/${resource}:batchEmbedContents`, headers: geminiHeaders(apiKey), body: { requests } };
}
