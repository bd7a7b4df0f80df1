/**
 * Request and response examples of every operation, and code samples of the main ones, as the reference at
 * /docs shows them. `buildOpenApi` writes them into the document (`example` of the request body, of each query
 * parameter and of the success response); test/api/openapi-examples.test.ts validates every request example
 * against the very ajv schema the route validates with, and every response example against its response schema.
 * Model ids are the demo catalog's, so "try it" against `npm start -- --demo` works as shown.
 */

import { BATCH_EXAMPLES } from './batch-examples';

/**
 * The origin every example and code sample names (`npm start`'s default). GET /openapi.json serves the document with
 * it replaced by the origin the document was fetched from (api/routes/docs.route.ts).
 */
export const EXAMPLE_ORIGIN = 'http://localhost:3000';

export interface OperationExamples {
  /** The JSON request body. */
  request?: unknown;
  /** Query parameters (as their JSON values; the query schema coerces strings). */
  query?: Record<string, unknown>;
  /** The success response body (JSON operations), or its text. */
  response: unknown;
}

const T = '2026-11-24T12:00:00.000Z';
const T2 = '2026-11-24T12:00:02.000Z';
const GEN = 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3';
const KEY_ID = 'key_01JDQ3TZ2B4C6D8E0F2G4H6J8K';
const FILE_ID = 'file_01JDQ3W9X1Y3Z5A7B9C1D3E5F7';
const usage = { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 };
const keyRecord = {
  id: KEY_ID,
  name: 'backend',
  label: 'sy_...a1B2c3',
  user_id: 'usr_01JDQ3SX4N6P8Q0R2S4T6U8V0W',
  creator_user_id: 'usr_01JDQ3SX4N6P8Q0R2S4T6U8V0W',
  limit: 500,
  limit_remaining: 487.25,
  limit_reset: 'monthly',
  usage: 12.75,
  allowed_models: ['openai/gpt-4.1-mini'],
  rate_limit_per_minute: 600,
  disabled: false,
  revoked_at: null,
  created_at: T,
  updated_at: T,
};
const storedFile = {
  id: FILE_ID,
  fileType: 'IMAGE',
  mimeType: 'image/png',
  source: 'USER_UPLOAD',
  storagePolicy: 'TEMP_UPLOAD',
  url: `${EXAMPLE_ORIGIN}/v1/files/${FILE_ID}/content?exp=1795525200&sig=3q2-7wF0`,
  size: 48213,
  createdAt: T,
  updatedAt: T,
  externalUserId: 'customer-42',
  expiresAt: '2026-11-25T12:00:00.000Z',
};
const historyItem = {
  id: GEN,
  model: 'openai/gpt-4.1-mini',
  modelDisplayName: 'GPT-4.1 mini',
  requestType: 'chat',
  provider: 'openai',
  status: 'completed',
  cost: '0.004200',
  usage,
  generationTimeMs: 812,
  createdAt: T,
  apiKeyShort: 'a1B2c3',
};
/** Replies as the service gives them (recorded from the demo catalog; test/api/openapi-examples-live.test.ts keeps them true). */
/** A short text answer's completion token details: nothing but plain text. */
const noCompletionDetails = {
  reasoning_tokens: 0,
  audio_tokens: 0,
  image_tokens: 0,
  accepted_prediction_tokens: 0,
  rejected_prediction_tokens: 0
};
const responseObject = {
  id: 'resp_01JDQ3V2K8M4T6P9R2W5Y7Z1A3',
  object: 'response',
  created_at: 1795521600,
  status: 'completed',
  background: false,
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: 256,
  max_tool_calls: null,
  model: 'openai/gpt-4.1-mini',
  output: [
    {
      type: 'message',
      id: 'msg_01JDQ3V2K8M4T6P9R2W5Y7Z1A3_0',
      status: 'completed',
      role: 'assistant',
      content: [
        {
          type: 'output_text',
          text: 'Hello! How can I help you today?',
          annotations: [],
          logprobs: []
        }
      ]
    }
  ],
  output_text: 'Hello! How can I help you today?',
  parallel_tool_calls: true,
  previous_response_id: null,
  prompt_cache_key: null,
  reasoning: { effort: null, summary: null },
  safety_identifier: null,
  store: true,
  temperature: null,
  text: { format: { type: 'text' }, verbosity: 'medium' },
  tool_choice: 'auto',
  tools: [],
  top_logprobs: 0,
  top_p: null,
  truncation: 'disabled',
  usage: {
    input_tokens: 2,
    output_tokens: 3,
    total_tokens: 5,
    prompt_tokens: 2,
    completion_tokens: 3,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, audio_tokens: 0, video_tokens: 0 },
    prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, audio_tokens: 0, video_tokens: 0 },
    output_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      image_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0
    },
    completion_tokens_details: noCompletionDetails,
    server_tool_use: { web_search_requests: 0 },
    server_tool_use_details: { web_search_requests: 0, tool_calls_requested: 0, tool_calls_executed: 0, steps: 0 },
    cost_rub: 0.00056,
    cost: 0.00056,
    cost_details: { inference_cost_rub: 0.00056, server_tools_cost_rub: 0 }
  },
  user: null,
  metadata: {},
  completed_at: 1795521602,
  switchyard: {}
};
const chatCompletion = {
  id: 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3',
  object: 'chat.completion',
  created: 1795521600,
  model: 'openai/gpt-4.1-mini',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Hello! How can I help you today?', refusal: null },
      logprobs: null,
      finish_reason: 'stop'
    }
  ],
  usage: {
    prompt_tokens: 9,
    completion_tokens: 3,
    total_tokens: 12,
    prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, audio_tokens: 0, video_tokens: 0 },
    completion_tokens_details: noCompletionDetails,
    cost_rub: 0.00084,
    cost: 0.00084
  },
  switchyard: {}
};
const embeddingList = {
  id: 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3',
  object: 'list',
  data: [
    {
      object: 'embedding',
      embedding: [-0.1958, 0.2884, -0.2226, -0.3495],
      index: 0
    },
    {
      object: 'embedding',
      embedding: [0.3086, -0.3269, -0.7546, -0.4055],
      index: 1
    }
  ],
  model: 'openai/text-embedding-3-small',
  usage: { prompt_tokens: 11, total_tokens: 11, cost_rub: 2.2e-05, cost: 2.2e-05 }
};
const typedAnswers = {
  id: 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3',
  model: 'gpt-4.1-mini',
  answers: {
    refund: { type: 'noul', noul: 0.9698 },
    topic: {
      type: 'choice',
      choice: 'product',
      confidence: 0.7765,
      probabilities: { delivery: 0.1284, product: 0.7765, billing: 0.0951 }
    },
    anger: {
      type: 'score',
      score: 0.5256,
      label: 'annoyed',
      probabilities: { calm: 0.1464, annoyed: 0.656, furious: 0.1976 }
    }
  },
  usage: { input_tokens: 301, output_tokens: 3, cost_rub: 0.0125 }
};
const model = {
  id: 'openai/gpt-4.1-mini',
  object: 'model',
  created: 1767225600,
  owned_by: 'openai',
  name: 'GPT-4.1 mini',
  type: 'chat',
  endpoints: [
    {
      provider: 'openai',
      pricing: { prompt: '40', cached_prompt: '10', completion: '160', request: '0' },
      supports: ['temperature', 'top_p', 'stop', 'seed', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'max_tokens', 'stream', 'presence_penalty', 'frequency_penalty', 'logprobs', 'top_logprobs'],
      context_length: 1047576,
      region: 'us'
    },
    {
      provider: 'azure-eu',
      pricing: { prompt: '44', cached_prompt: '11', completion: '176', request: '0' },
      supports: ['temperature', 'top_p', 'stop', 'seed', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'max_tokens', 'stream', 'presence_penalty', 'frequency_penalty', 'logprobs', 'top_logprobs'],
      context_length: 1047576,
      region: 'eu'
    }
  ]
};
const modelList = { object: 'list', data: [model] };
const imageResult = {
  created: 1795521600,
  data: [
    {
      url: `${EXAMPLE_ORIGIN}/v1/files/${FILE_ID}/content?exp=1795525200&sig=3q2-7wF0kQx`,
      revised_prompt: 'A lighthouse at dawn, watercolor'
    }
  ],
  usage: {
    input_units: 0,
    output_units: 1,
    input_tokens: 8,
    output_tokens: 272,
    total_tokens: 280,
    cost_rub: 4.2,
    cost: 4.2
  }
};
const mediaPending = {
  id: 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3',
  object: 'media.generation',
  status: 'pending',
  created: 1795521600,
  model: 'kwaivgi/kling-v2.1',
  taskId: 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3'
};
const mediaCompleted = {
  id: 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3',
  object: 'media.generation',
  status: 'completed',
  created: 1795521600,
  model: 'kwaivgi/kling-v2.1',
  completed_at: 1795521724,
  data: {
    url: `${EXAMPLE_ORIGIN}/v1/files/${FILE_ID}/content?exp=1795525200&sig=3q2-7wF0kQx`,
    mime_type: 'video/mp4',
    file_id: 'file_01JDQ3W9X1Y3Z5A7B9C1D3E5F7',
    duration_seconds: 5
  },
  usage: { input_units: 0, output_units: 1, duration_seconds: 5, cost_rub: 140, cost: 140 }
};

export const EXAMPLES: Record<string, OperationExamples> = {
  'GET /healthz': { response: { status: 'ok' } },
  'GET /readyz': { response: { status: 'ready', checks: { database: true, redis: true, workers: true } } },
  'GET /metrics': { response: '# HELP sy_http_requests_total HTTP requests\n# TYPE sy_http_requests_total counter\nsy_http_requests_total{method="POST",route="/v1/responses",status="200"} 42\n' },
  'GET /openapi.json': { response: { openapi: '3.1.0', info: { title: 'Switchyard API', version: '0.1.0' }, paths: {} } },
  'GET /docs': { response: '<!doctype html><html>… the reference …</html>' },
  'GET /docs/assets/{file}': { response: "Scalar.createApiReference('#app', { url: '/openapi.json' })" },
  'GET /admin/login': { response: '' },

  'GET /v1/key': {
    response: { creator_user_id: 'usr_01JDQ3SX4N6P8Q0R2S4T6U8V0W', label: 'sy_...a1B2c3', limit: 500, limit_remaining: 487.25, limit_reset: 'monthly', usage: 12.75, usage_daily: 1.5, usage_weekly: 6.25, usage_monthly: 12.75 },
  },
  'GET /v1/balance': { response: { amount: '1000.000000', available: '987.250000', reservedAmount: '0.000000', spentAmount: '12.750000', updatedAt: T } },
  'GET /v2/balance': {
    response: {
      amount: '1000.000000',
      available: '987.250000',
      reserved: '0.000000',
      spent: '12.750000',
      currency: 'RUB',
      updatedAt: T,
      key: { limit: '500.000000', limitRemaining: '487.250000', limitReset: 'monthly' },
      member: null,
    },
  },

  'POST /v1/keys': {
    request: { name: 'backend', limit: '500', limit_reset: 'monthly', allowed_models: ['openai/gpt-4.1-mini'], rate_limit_per_minute: 600 },
    response: { ...keyRecord, key: 'sy_Xk3p9QmZ2vB7nR4tW8yL1cF6hJ0dS5gA3eK9uPq2' },
  },
  'GET /v1/keys': { response: { data: [keyRecord] } },
  'PATCH /v1/keys/{id}': { request: { limit: '1000', disabled: false }, response: { ...keyRecord, limit: 1000, limit_remaining: 987.25 } },
  'DELETE /v1/keys/{id}': { response: { id: KEY_ID, revoked: true } },

  'POST /v1/responses': {
    request: { model: 'openai/gpt-4.1-mini', input: 'Hello!', max_output_tokens: 256 },
    response: responseObject,
  },
  'GET /v1/responses/{id}': { query: { stream: false }, response: responseObject },
  'GET /v1/responses/{id}/input_items': {
    query: { order: 'asc', limit: 20 },
    response: {
      object: 'list',
      data: [{ id: 'msg_01JDQ3V2K8M4T6P9R2W5Y7Z1A3_in0', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'Hello!' }] }],
      first_id: 'msg_01JDQ3V2K8M4T6P9R2W5Y7Z1A3_in0',
      last_id: 'msg_01JDQ3V2K8M4T6P9R2W5Y7Z1A3_in0',
      has_more: false,
    },
  },
  'POST /v1/responses/{id}/cancel': {
    response: { ...responseObject, status: 'cancelled', background: true, output: [], output_text: '', usage: null, completed_at: null },
  },
  'DELETE /v1/responses/{id}': { response: { id: 'resp_01JDQ3V2K8M4T6P9R2W5Y7Z1A3', object: 'response', deleted: true } },
  'POST /v1/chat/completions': {
    request: {
      model: 'openai/gpt-4.1-mini',
      messages: [
        { role: 'system', content: 'You answer in one sentence.' },
        { role: 'user', content: 'Hello!' },
      ],
      max_tokens: 256,
    },
    response: chatCompletion,
  },
  'POST /v1/embeddings': {
    request: { model: 'openai/text-embedding-3-small', input: ['The quick brown fox', 'jumps over the lazy dog'] },
    response: embeddingList,
  },
  'POST /v1/systemone': {
    request: {
      state: { message: 'My order arrived broken, I want my money back.' },
      model: 'openai/gpt-4.1-mini',
      questions: {
        refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
        topic: { type: 'choice', instructions: 'What is the message about?', criteria: { delivery: 'Delivery or shipping', product: 'A product defect', billing: 'Payment or billing' } },
        anger: { type: 'score', instructions: 'How angry is the customer?', criteria: ['calm', 'annoyed', 'furious'] },
      },
    },
    response: typedAnswers,
  },
  'GET /v1/models': { response: modelList },
  'GET /v1/models/{id}': { response: model },

  'GET /v1/history/generations': {
    query: { page: 1, limit: 20, status: 'completed', sortBy: 'createdAt', sortOrder: 'desc' },
    response: { items: [historyItem], meta: { page: 1, limit: 20, total: 1, totalPages: 1 } },
  },
  'GET /v1/history/generations/{id}': {
    response: {
      id: GEN,
      organizationId: 'org_01JDQ3S1A2B3C4D5E6F7G8H9J0',
      apiKeyId: KEY_ID,
      unifiedModelId: 'openai/gpt-4.1-mini',
      requestType: 'chat',
      apiType: 'responses',
      responseMode: 'sync',
      status: 'completed',
      finishReason: 'stop',
      finalEndpointSlug: 'openai/gpt-4.1-mini@openai',
      usage,
      clientCost: '0.004200',
      generationTimeMs: 812,
      latencyMs: 240,
      queueTimeMs: 3,
      isCancelled: false,
      createdAt: T,
      completedAt: T2,
      attemptsCount: 1,
      routing: { candidates: [{ endpoint: 'openai/gpt-4.1-mini@openai', chosen: true }] },
      warnings: [],
      error: null,
    },
  },

  'GET /v1/storage/files': { query: { page: 1, limit: 20 }, response: { data: [storedFile], meta: { page: 1, limit: 20, total: 1, totalPages: 1 } } },
  'POST /v1/storage/files': { query: { storagePolicy: 'TEMP_UPLOAD', externalUserId: 'customer-42' }, response: storedFile },
  'GET /v1/storage/files/{id}': { response: storedFile },
  'PATCH /v1/storage/files/{id}': { request: { storagePolicy: 'PERMANENT' }, response: { ...storedFile, storagePolicy: 'PERMANENT', expiresAt: null } },
  'DELETE /v1/storage/files/{id}': { response: { success: true } },
  'GET /v1/files/{id}/content': { response: '(the file bytes)' },
  ...BATCH_EXAMPLES,

  'POST /v2/images/generations': {
    request: { model: 'openai/gpt-image-1', prompt: 'A lighthouse at dawn, watercolor', n: 1, size: '1024x1024' },
    response: imageResult,
  },
  'POST /v1/images/generations': {
    request: { model: 'openai/gpt-image-1', prompt: 'A lighthouse at dawn, watercolor', n: 1, size: '1024x1024' },
    response: imageResult,
  },
  'POST /v1/media': {
    request: { model: 'kwaivgi/kling-v2.1', input: { prompt: 'A paper boat drifting down a rainy street', aspect_ratio: '16:9' }, async: true },
    response: mediaPending,
  },
  'GET /v1/media/{id}': { response: mediaCompleted },
  'GET /v2/media/{id}': { response: mediaCompleted },
  'POST /v1/media/{id}/operations': { request: { operation: 'upscale_1080p', async: true }, response: { ...mediaPending, id: 'gen_01JDQ3X4Y6Z8A0B2C4D6E8F0G2', taskId: 'gen_01JDQ3X4Y6Z8A0B2C4D6E8F0G2', model: 'topazlabs/video-upscale' } },
  'POST /v1/media/{id}/cancel': { response: { ...mediaPending, status: 'cancelled' } },
};

type CodeSample = { lang: string; label: string; source: string };

/** curl, Python and Node (the official `openai` SDKs) for the routes the SDKs cover. */
function sdkSamples(curlPath: string, body: unknown, python: string, node: string): CodeSample[] {
  const curl = body === undefined
    ? `curl ${EXAMPLE_ORIGIN}${curlPath} \\\n  -H "Authorization: Bearer $SWITCHYARD_API_KEY"`
    : `curl ${EXAMPLE_ORIGIN}${curlPath} \\\n  -H "Authorization: Bearer $SWITCHYARD_API_KEY" \\\n  -H 'Content-Type: application/json' \\\n  -d '${JSON.stringify(body)}'`;
  return [
    { lang: 'Shell', label: 'curl', source: curl },
    { lang: 'Python', label: 'Python (openai)', source: `import os\nfrom openai import OpenAI\n\nclient = OpenAI(base_url="${EXAMPLE_ORIGIN}/v1", api_key=os.environ["SWITCHYARD_API_KEY"])\n\n${python}` },
    { lang: 'JavaScript', label: 'Node (openai)', source: `import OpenAI from 'openai';\n\nconst client = new OpenAI({ baseURL: '${EXAMPLE_ORIGIN}/v1', apiKey: process.env.SWITCHYARD_API_KEY });\n\n${node}` },
  ];
}

export const CODE_SAMPLES: Record<string, CodeSample[]> = {
  'POST /v1/responses': sdkSamples(
    '/v1/responses',
    { model: 'openai/gpt-4.1-mini', input: 'Hello!' },
    'response = client.responses.create(model="openai/gpt-4.1-mini", input="Hello!")\nprint(response.output_text)',
    "const response = await client.responses.create({ model: 'openai/gpt-4.1-mini', input: 'Hello!' });\nconsole.log(response.output_text);",
  ),
  'POST /v1/chat/completions': sdkSamples(
    '/v1/chat/completions',
    { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'Hello!' }] },
    'completion = client.chat.completions.create(\n    model="openai/gpt-4.1-mini",\n    messages=[{"role": "user", "content": "Hello!"}],\n)\nprint(completion.choices[0].message.content)',
    "const completion = await client.chat.completions.create({\n  model: 'openai/gpt-4.1-mini',\n  messages: [{ role: 'user', content: 'Hello!' }],\n});\nconsole.log(completion.choices[0].message.content);",
  ),
  'POST /v1/embeddings': sdkSamples(
    '/v1/embeddings',
    { model: 'openai/text-embedding-3-small', input: 'The quick brown fox' },
    'result = client.embeddings.create(model="openai/text-embedding-3-small", input="The quick brown fox")\nprint(len(result.data[0].embedding))',
    "const result = await client.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'The quick brown fox' });\nconsole.log(result.data[0].embedding.length);",
  ),
  'GET /v1/models': sdkSamples(
    '/v1/models',
    undefined,
    'for model in client.models.list():\n    print(model.id)',
    'for await (const model of client.models.list()) console.log(model.id);',
  ),
  'POST /v1/images/generations': sdkSamples(
    '/v1/images/generations',
    { model: 'openai/gpt-image-1', prompt: 'A lighthouse at dawn, watercolor' },
    'image = client.images.generate(model="openai/gpt-image-1", prompt="A lighthouse at dawn, watercolor")\nprint(image.data[0].url)',
    "const image = await client.images.generate({ model: 'openai/gpt-image-1', prompt: 'A lighthouse at dawn, watercolor' });\nconsole.log(image.data[0].url);",
  ),
};
