/**
 * POST /v1/responses body (interface.md "POST /v1/responses", OpenAI's Responses API
 * https://platform.openai.com/docs/api-reference/responses/create). Unknown top-level fields are refused (400
 * naming the field); inside input items extra fields are tolerated because clients send `response.output`
 * items back as input, with `id`, `status`, `annotations` and the like.
 *
 * Fields OpenAI marks nullable accept `null` (the SDK passes through what the caller gives it); a null is
 * treated as absent.
 */
import type { ProviderRouting } from './routing.schema';
import { routingSchema } from './routing.schema';

/** `{...schema}` that also accepts null. */
export function nullable<T extends { type: string | readonly string[] }>(schema: T): Omit<T, 'type'> & { type: string[] } {
  const types = typeof schema.type === 'string' ? [schema.type] : [...schema.type];
  const out = { ...schema, type: [...types, 'null'] } as Omit<T, 'type'> & { type: string[]; enum?: unknown[] };
  if (Array.isArray(out.enum)) out.enum = [...out.enum, null];
  return out;
}

export const REASONING_EFFORT_VALUES = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type PublicReasoningEffort = (typeof REASONING_EFFORT_VALUES)[number];
export const PLUGIN_NAMES = ['masker'] as const;
export type PluginName = (typeof PLUGIN_NAMES)[number];

/**
 * The most output tokens a request may ask for, and the output limit of an endpoint whose catalog entry gives no
 * `maxOutputTokens` (docs/responses.md). No model offers more; a larger number is a mistake or an attack (1e300).
 */
export const OUTPUT_TOKENS_CEILING = 1_000_000;

export const FUNCTION_NAME = '^[a-zA-Z0-9_-]{1,64}$';

/** `if` the object's `type` is `value` (and present). */
export const typeIs = (value: string) => ({ required: ['type'], properties: { type: { const: value } } });

// ---------- input ----------

const contentPart = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['input_text', 'input_image', 'input_file', 'output_text', 'refusal'] } },
  allOf: [
    { if: typeIs('input_text'), then: { required: ['text'], properties: { text: { type: 'string' } } } },
    {
      if: typeIs('input_image'),
      then: {
        required: ['image_url'],
        properties: { image_url: { type: 'string', minLength: 1 }, detail: { enum: ['low', 'high', 'auto'] } },
      },
    },
    {
      if: typeIs('input_file'),
      then: {
        anyOf: [{ required: ['file_data'] }, { required: ['file_url'] }],
        properties: { file_data: { type: 'string' }, file_url: { type: 'string' }, filename: { type: 'string' } },
      },
    },
    { if: typeIs('output_text'), then: { required: ['text'], properties: { text: { type: 'string' } } } },
    { if: typeIs('refusal'), then: { required: ['refusal'], properties: { refusal: { type: 'string' } } } },
  ],
} as const;

const messageItem = {
  required: ['role', 'content'],
  properties: {
    role: { enum: ['user', 'assistant', 'system', 'developer'] },
    content: { type: ['string', 'array'], items: contentPart },
  },
} as const;

const functionCallItem = {
  required: ['call_id', 'name', 'arguments'],
  properties: {
    call_id: { type: 'string', minLength: 1 },
    name: { type: 'string', minLength: 1 },
    arguments: { type: 'string' },
  },
} as const;

const functionCallOutputItem = {
  required: ['call_id', 'output'],
  properties: {
    call_id: { type: 'string', minLength: 1 },
    output: { type: ['string', 'array'], items: contentPart },
  },
} as const;

const reasoningItem = {
  required: ['summary'],
  properties: {
    summary: {
      type: 'array',
      items: { type: 'object', required: ['text'], properties: { type: { const: 'summary_text' }, text: { type: 'string' } } },
    },
  },
} as const;

const itemReference = { required: ['id'], properties: { id: { type: 'string', minLength: 1 } } } as const;

const inputItem = {
  type: 'object',
  properties: {
    type: { enum: ['message', 'function_call', 'function_call_output', 'reasoning', 'item_reference'] },
  },
  allOf: [
    { if: { anyOf: [{ not: { required: ['type'] } }, typeIs('message')] }, then: messageItem },
    { if: typeIs('function_call'), then: functionCallItem },
    { if: typeIs('function_call_output'), then: functionCallOutputItem },
    { if: typeIs('reasoning'), then: reasoningItem },
    { if: typeIs('item_reference'), then: itemReference },
  ],
} as const;

// ---------- tools ----------

const tool = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', minLength: 1 } },
  if: typeIs('function'),
  then: {
    required: ['name'],
    properties: {
      name: { type: 'string', pattern: FUNCTION_NAME },
      description: { type: ['string', 'null'] },
      parameters: { type: ['object', 'null'] },
      strict: { type: ['boolean', 'null'] },
    },
  },
} as const;

/**
 * A `tool_choice`: a mode string, or an object whose `type` is checked by `type` and whose variants by `cases`
 * (chat completions and responses spell the object differently).
 */
export const toolChoiceOf = (type: object, cases: object[]) => ({
  type: ['string', 'object'],
  if: { type: 'string' },
  then: { enum: ['auto', 'none', 'required'] },
  else: { required: ['type'], properties: { type }, allOf: cases },
});

const toolChoice = toolChoiceOf({ type: 'string', minLength: 1 }, [
  { if: typeIs('function'), then: { required: ['name'], properties: { name: { type: 'string', minLength: 1 } } } },
  {
    if: typeIs('allowed_tools'),
    then: {
      required: ['mode', 'tools'],
      properties: {
        mode: { enum: ['auto', 'required'] },
        tools: { type: 'array', items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } },
      },
    },
  },
]);

// ---------- text, reasoning ----------

/** A `json_schema` output format's fields, the same in chat completions' `response_format.json_schema`. */
export const JSON_SCHEMA_FORMAT_FIELDS = {
  name: { type: 'string', pattern: FUNCTION_NAME },
  schema: { type: 'object' },
  strict: { type: ['boolean', 'null'] },
  description: { type: 'string' },
} as const;

const textFormat = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['text', 'json_object', 'json_schema'] } },
  if: typeIs('json_schema'),
  then: { required: ['name', 'schema'], properties: JSON_SCHEMA_FORMAT_FIELDS },
} as const;

const text = {
  type: 'object',
  additionalProperties: false,
  properties: {
    format: textFormat,
    verbosity: nullable({ type: 'string', enum: ['low', 'medium', 'high'] }),
  },
} as const;

export const reasoningSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: { type: 'string', minLength: 1 },
    effort: nullable({ type: 'string', enum: [...REASONING_EFFORT_VALUES] }),
    effort_level: nullable({ type: 'string', enum: [...REASONING_EFFORT_VALUES] }),
    summary: nullable({ type: 'string', enum: ['auto', 'concise', 'detailed'] }),
    /** OpenAI's deprecated spelling of `summary`. */
    generate_summary: nullable({ type: 'string', enum: ['auto', 'concise', 'detailed'] }),
    max_tokens: { type: 'integer', minimum: 0 },
    enabled: { type: 'boolean' },
  },
} as const;

export const metadataSchema = {
  type: ['object', 'null'],
  maxProperties: 16,
  propertyNames: { maxLength: 64 },
  additionalProperties: { type: 'string', maxLength: 512 },
} as const;

// ---------- the body ----------

export const responsesSchema = {
  $id: 'ResponsesRequest',
  type: 'object',
  additionalProperties: false,
  // A model is needed: `model`, or the first of a non-empty `models`.
  anyOf: [{ required: ['model'] }, { required: ['models'], properties: { models: { minItems: 1 } } }],
  properties: {
    input: { type: ['string', 'array'], items: inputItem },
    model: { type: 'string', minLength: 1, maxLength: 512 },
    models: { type: 'array', maxItems: 10, items: { type: 'string', minLength: 1, maxLength: 512 } },
    instructions: nullable({ type: 'string' }),
    metadata: metadataSchema,
    tools: { type: 'array', maxItems: 128, items: tool },
    tool_choice: toolChoice,
    parallel_tool_calls: nullable({ type: 'boolean' }),
    background: nullable({ type: 'boolean' }),
    include: nullable({ type: 'array', items: { type: 'string' } }),
    text,
    reasoning: nullable(reasoningSchema),
    max_output_tokens: nullable({ type: 'integer', minimum: 1, maximum: OUTPUT_TOKENS_CEILING }),
    temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
    top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
    presence_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
    frequency_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
    top_k: nullable({ type: 'integer', minimum: 0 }),
    top_logprobs: nullable({ type: 'integer', minimum: 0, maximum: 20 }),
    max_tool_calls: nullable({ type: 'integer', minimum: 1 }),
    stop_server_tools_when: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type'],
        additionalProperties: false,
        properties: { type: { type: 'string', minLength: 1 }, value: { type: 'number' }, value_rub: { type: 'number' } },
      },
    },
    prompt: nullable({ type: 'object' }),
    image_config: { type: 'object' },
    // OpenAI accepts a conversation id string as well as `{id}`.
    conversation: { type: ['object', 'string', 'null'] },
    moderation: nullable({ type: 'object' }),
    modalities: { type: 'array', items: { type: 'string' } },
    context_management: nullable({ type: 'array', items: { type: 'object' } }),
    prompt_cache_key: nullable({ type: 'string', maxLength: 1024 }),
    previous_response_id: nullable({ type: 'string', minLength: 1 }),
    session_id: { type: 'string', minLength: 1, maxLength: 256 },
    stream: nullable({ type: 'boolean' }),
    stream_options: nullable({
      type: 'object',
      additionalProperties: false,
      properties: { include_obfuscation: { type: 'boolean' }, hide_intermediate_text: { type: 'boolean' } },
    }),
    provider: routingSchema,
    user: { type: 'string', maxLength: 512 },
    safety_identifier: nullable({ type: 'string', maxLength: 512 }),
    store: nullable({ type: 'boolean' }),
    plugins: { type: 'array', uniqueItems: true, items: { enum: [...PLUGIN_NAMES] } },
    // Standard OpenAI fields outside the interface table, accepted so SDK code runs unchanged; echoed or ignored.
    truncation: nullable({ type: 'string', enum: ['auto', 'disabled'] }),
    service_tier: nullable({ type: 'string', description: "'auto', 'default', 'priority' or 'flex': a tier other than standard goes to an endpoint whose catalog sells it (else it is left out, with a warning) and is charged the price of the tier that served the call" }),
    prompt_cache_retention: nullable({ type: 'string' }),
  },
} as const;

// ---------- TypeScript view of a validated body ----------

export type ResponsesContentPart =
  | { type: 'input_text'; text: string }
  | { type: 'input_image'; image_url: string; detail?: 'low' | 'high' | 'auto' }
  | { type: 'input_file'; file_data?: string; file_url?: string; filename?: string }
  | { type: 'output_text'; text: string; annotations?: unknown[]; logprobs?: unknown[] }
  | { type: 'refusal'; refusal: string };

export type ResponsesInputItem =
  | {
      type?: 'message';
      role: 'user' | 'assistant' | 'system' | 'developer';
      content: string | ResponsesContentPart[];
      id?: string;
      status?: string;
    }
  | { type: 'function_call'; call_id: string; name: string; arguments: string; id?: string; status?: string }
  | { type: 'function_call_output'; call_id: string; output: string | ResponsesContentPart[]; id?: string; status?: string }
  | { type: 'reasoning'; id?: string; summary: Array<{ type?: 'summary_text'; text: string }>; encrypted_content?: string | null }
  | { type: 'item_reference'; id: string };

export interface ResponsesFunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
}
/** Server-side tools (web_search, file_search, ...) are accepted and echoed; only function tools reach models. */
export type ResponsesTool = ResponsesFunctionTool | { type: string; [key: string]: unknown };

export type ResponsesToolChoice =
  | 'auto'
  | 'none'
  | 'required'
  | { type: 'function'; name: string }
  | { type: 'allowed_tools'; mode: 'auto' | 'required'; tools: Array<{ type: string; name?: string; [key: string]: unknown }> }
  | { type: string; [key: string]: unknown };

export type ResponsesTextFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean | null; description?: string };

export interface ResponsesReasoning {
  type?: string;
  effort?: PublicReasoningEffort | null;
  effort_level?: PublicReasoningEffort | null;
  summary?: 'auto' | 'concise' | 'detailed' | null;
  generate_summary?: 'auto' | 'concise' | 'detailed' | null;
  max_tokens?: number;
  enabled?: boolean;
}

export interface ResponsesBody {
  input?: string | ResponsesInputItem[];
  model?: string;
  models?: string[];
  instructions?: string | null;
  metadata?: Record<string, string> | null;
  tools?: ResponsesTool[];
  tool_choice?: ResponsesToolChoice;
  parallel_tool_calls?: boolean | null;
  background?: boolean | null;
  include?: string[] | null;
  text?: { format?: ResponsesTextFormat; verbosity?: 'low' | 'medium' | 'high' | null };
  reasoning?: ResponsesReasoning | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  top_k?: number | null;
  top_logprobs?: number | null;
  max_tool_calls?: number | null;
  stop_server_tools_when?: Array<{ type: string; value?: number; value_rub?: number }>;
  prompt?: Record<string, unknown> | null;
  image_config?: Record<string, unknown>;
  conversation?: Record<string, unknown> | string | null;
  moderation?: Record<string, unknown> | null;
  modalities?: string[];
  context_management?: Array<Record<string, unknown>> | null;
  prompt_cache_key?: string | null;
  previous_response_id?: string | null;
  session_id?: string;
  stream?: boolean | null;
  stream_options?: { include_obfuscation?: boolean; hide_intermediate_text?: boolean } | null;
  provider?: ProviderRouting;
  user?: string;
  safety_identifier?: string | null;
  store?: boolean | null;
  plugins?: PluginName[];
  truncation?: 'auto' | 'disabled' | null;
  service_tier?: string | null;
  prompt_cache_retention?: string | null;
}
