import type { OperationExamples } from './examples';

/** Examples of text and embeddings operations (responses, chat completions, embeddings, typed questions) and models. */

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
  service_tier: 'default',
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
  service_tier: 'default',
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

export const TEXT_EXAMPLES: Record<string, OperationExamples> = {
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
};
