/**
 * POST /v1/chat/completions body, OpenAI's shape (https://platform.openai.com/docs/api-reference/chat/create)
 * plus our extensions (`models`, `provider`, `top_k`, `reasoning`, `session_id`, `plugins`).
 *
 * Unknown top-level fields are refused, except standard OpenAI fields that SDK code commonly sends: `safety_identifier`,
 * `service_tier` and `verbosity` go to the providers that take them (docs/clients.md "Upstream fidelity"); `logit_bias`,
 * `prompt_cache_retention`, `modalities` (text only) change nothing we could honour or refuse meaningfully. Fields we cannot serve
 * (`audio`, `functions`/`function_call`, `prediction`, `web_search_options`, `n` above 1) are 400.
 */
import {
  FUNCTION_NAME,
  JSON_SCHEMA_FORMAT_FIELDS,
  toolChoiceOf,
  typeIs,
  metadataSchema,
  nullable,
  PLUGIN_NAMES,
  REASONING_EFFORT_VALUES,
  reasoningSchema,
  type PluginName,
  type PublicReasoningEffort,
  type ResponsesReasoning,
} from './responses.schema';
import { routingSchema, type ProviderRouting } from './routing.schema';

const roleIs = (value: string) => ({ required: ['role'], properties: { role: { const: value } } });

const textPart = {
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { const: 'text' }, text: { type: 'string' } },
} as const;

const userPart = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['text', 'image_url', 'file'] } },
  allOf: [
    { if: typeIs('text'), then: { required: ['text'], properties: { text: { type: 'string' } } } },
    {
      if: typeIs('image_url'),
      then: {
        required: ['image_url'],
        properties: {
          image_url: {
            type: 'object',
            required: ['url'],
            properties: { url: { type: 'string', minLength: 1 }, detail: { enum: ['low', 'high', 'auto'] } },
          },
        },
      },
    },
    {
      if: typeIs('file'),
      then: {
        required: ['file'],
        properties: {
          file: {
            type: 'object',
            required: ['file_data'],
            properties: { file_data: { type: 'string', minLength: 1 }, filename: { type: 'string' } },
          },
        },
      },
    },
  ],
} as const;

const assistantPart = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['text', 'refusal'] } },
  allOf: [
    { if: typeIs('text'), then: { required: ['text'], properties: { text: { type: 'string' } } } },
    { if: typeIs('refusal'), then: { required: ['refusal'], properties: { refusal: { type: 'string' } } } },
  ],
} as const;

const toolCall = {
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: { type: 'string', minLength: 1 },
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name', 'arguments'],
      properties: { name: { type: 'string', minLength: 1 }, arguments: { type: 'string' } },
    },
  },
} as const;

const textContent = { type: ['string', 'array'], items: textPart } as const;

const message = {
  type: 'object',
  required: ['role'],
  properties: { role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] }, name: { type: 'string' } },
  allOf: [
    { if: roleIs('system'), then: { required: ['content'], properties: { content: textContent } } },
    { if: roleIs('developer'), then: { required: ['content'], properties: { content: textContent } } },
    { if: roleIs('user'), then: { required: ['content'], properties: { content: { type: ['string', 'array'], items: userPart } } } },
    {
      if: roleIs('assistant'),
      then: {
        properties: {
          content: { type: ['string', 'array', 'null'], items: assistantPart },
          tool_calls: { type: ['array', 'null'], items: toolCall },
          refusal: { type: ['string', 'null'] },
        },
      },
    },
    {
      if: roleIs('tool'),
      then: {
        required: ['tool_call_id', 'content'],
        properties: { tool_call_id: { type: 'string', minLength: 1 }, content: textContent },
      },
    },
  ],
} as const;

const tool = {
  type: 'object',
  required: ['type', 'function'],
  properties: {
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', pattern: FUNCTION_NAME },
        description: { type: 'string' },
        parameters: { type: 'object' },
        strict: { type: ['boolean', 'null'] },
      },
    },
  },
} as const;

const namedFunction = {
  type: 'object',
  required: ['type', 'function'],
  properties: { type: { const: 'function' }, function: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } } },
} as const;

const toolChoice = toolChoiceOf({ enum: ['function', 'allowed_tools'] }, [
  { if: typeIs('function'), then: namedFunction },
  {
    if: typeIs('allowed_tools'),
    then: {
      required: ['allowed_tools'],
      properties: {
        allowed_tools: {
          type: 'object',
          required: ['mode', 'tools'],
          properties: { mode: { enum: ['auto', 'required'] }, tools: { type: 'array', items: namedFunction } },
        },
      },
    },
  },
]);

const responseFormat = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['text', 'json_object', 'json_schema'] } },
  if: typeIs('json_schema'),
  then: {
    required: ['json_schema'],
    properties: {
      json_schema: { type: 'object', required: ['name'], properties: JSON_SCHEMA_FORMAT_FIELDS },
    },
  },
} as const;

export const chatSchema = {
  $id: 'ChatCompletionRequest',
  type: 'object',
  additionalProperties: false,
  required: ['messages'],
  anyOf: [{ required: ['model'] }, { required: ['models'], properties: { models: { minItems: 1 } } }],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 512 },
    models: { type: 'array', maxItems: 10, items: { type: 'string', minLength: 1, maxLength: 512 } },
    messages: { type: 'array', minItems: 1, items: message },
    tools: { type: 'array', maxItems: 128, items: tool },
    tool_choice: toolChoice,
    parallel_tool_calls: nullable({ type: 'boolean' }),
    max_tokens: nullable({ type: 'integer', minimum: 1 }),
    max_completion_tokens: nullable({ type: 'integer', minimum: 1 }),
    temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
    top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
    top_k: nullable({ type: 'integer', minimum: 0 }),
    presence_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
    frequency_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
    stop: { type: ['string', 'array', 'null'], maxItems: 4, items: { type: 'string' } },
    seed: nullable({ type: 'integer' }),
    // Only one choice per request is supported.
    n: { type: ['integer', 'null'], enum: [1, null] },
    logprobs: nullable({ type: 'boolean' }),
    top_logprobs: nullable({ type: 'integer', minimum: 0, maximum: 20 }),
    response_format: responseFormat,
    reasoning_effort: nullable({ type: 'string', enum: [...REASONING_EFFORT_VALUES] }),
    reasoning: nullable({
      ...reasoningSchema,
      properties: { ...reasoningSchema.properties, exclude: { type: 'boolean' } },
    }),
    stream: nullable({ type: 'boolean' }),
    stream_options: nullable({
      type: 'object',
      additionalProperties: false,
      properties: { include_usage: { type: 'boolean' }, include_obfuscation: { type: 'boolean' } },
    }),
    user: { type: 'string', maxLength: 512 },
    metadata: metadataSchema,
    provider: routingSchema,
    prompt_cache_key: nullable({ type: 'string', maxLength: 1024 }),
    session_id: { type: 'string', minLength: 1, maxLength: 256 },
    store: nullable({ type: 'boolean' }),
    plugins: { type: 'array', uniqueItems: true, items: { enum: [...PLUGIN_NAMES] } },
    // Tolerated standard OpenAI fields (see the header comment).
    safety_identifier: nullable({ type: 'string', maxLength: 512 }),
    service_tier: nullable({ type: 'string', description: "'auto', 'default', 'priority' or 'flex': a tier other than standard goes to an endpoint whose catalog sells it (else it is left out, with a warning) and is charged the price of the tier that served the call" }),
    logit_bias: nullable({ type: 'object', additionalProperties: { type: 'number' } }),
    verbosity: nullable({ type: 'string', enum: ['low', 'medium', 'high'] }),
    prompt_cache_retention: nullable({ type: 'string' }),
    modalities: nullable({ type: 'array', items: { const: 'text' } }),
  },
} as const;

// ---------- TypeScript view of a validated body ----------

export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: 'low' | 'high' | 'auto' } }
  | { type: 'file'; file: { file_data: string; filename?: string } };

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessageParam =
  | { role: 'system' | 'developer'; content: string | Array<{ type: 'text'; text: string }>; name?: string }
  | { role: 'user'; content: string | ChatContentPart[]; name?: string }
  | {
      role: 'assistant';
      content?: string | Array<{ type: 'text'; text: string } | { type: 'refusal'; refusal: string }> | null;
      tool_calls?: ChatToolCall[] | null;
      refusal?: string | null;
      name?: string;
    }
  | { role: 'tool'; tool_call_id: string; content: string | Array<{ type: 'text'; text: string }> };

export interface ChatFunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

type NamedFunction = { type: 'function'; function: { name: string } };
export type ChatToolChoice =
  | 'auto'
  | 'none'
  | 'required'
  | NamedFunction
  | { type: 'allowed_tools'; allowed_tools: { mode: 'auto' | 'required'; tools: NamedFunction[] } };

export type ChatResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean | null; description?: string };
    };

export interface ChatBody {
  model?: string;
  models?: string[];
  messages: ChatMessageParam[];
  tools?: ChatFunctionTool[];
  tool_choice?: ChatToolChoice;
  parallel_tool_calls?: boolean | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  stop?: string | string[] | null;
  seed?: number | null;
  n?: 1 | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  response_format?: ChatResponseFormat;
  reasoning_effort?: PublicReasoningEffort | null;
  reasoning?: (ResponsesReasoning & { exclude?: boolean }) | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean; include_obfuscation?: boolean } | null;
  user?: string;
  metadata?: Record<string, string> | null;
  provider?: ProviderRouting;
  prompt_cache_key?: string | null;
  session_id?: string;
  store?: boolean | null;
  plugins?: PluginName[];
  safety_identifier?: string | null;
  service_tier?: string | null;
  logit_bias?: Record<string, number> | null;
  verbosity?: 'low' | 'medium' | 'high' | null;
  prompt_cache_retention?: string | null;
  modalities?: Array<'text'> | null;
}
