import { chatSchema } from '../../../shared/schemas/chat.schema';
import { embeddingsInputIssues, embeddingsSchema } from '../../../shared/schemas/embeddings.schema';
import { responsesSchema } from '../../../shared/schemas/responses.schema';
import { embeddingsRoutingSchema, routingSchema, typedQuestionRoutingSchema } from '../../../shared/schemas/routing.schema';
import { fullRouting, maximalResponsesBody } from './fixtures';
import { issues, paths } from './helpers';

describe('routing schemas', () => {
  it('accepts every field of the routing object', () => {
    expect(issues(routingSchema, fullRouting)).toEqual([]);
  });

  it('refuses unknown keys, bad sorts, negative ceilings and unknown ceilings, naming each', () => {
    const bad = { ...fullRouting, sort: 'random', colour: 'red', max_price: { prompt: -1, tokens: 3 } };
    expect(paths(routingSchema, bad).sort()).toEqual(['/colour', '/max_price/prompt', '/max_price/tokens', '/sort']);
    expect(paths(routingSchema, { order: 'acme' })).toEqual(['/order']);
    expect(paths(routingSchema, { max_price: { prompt: '-3' } })).toEqual(['/max_price/prompt']);
  });

  it('typed questions have no data_residency', () => {
    const { data_residency: _d, ...rest } = fullRouting;
    expect(issues(typedQuestionRoutingSchema, rest)).toEqual([]);
    expect(paths(typedQuestionRoutingSchema, fullRouting)).toEqual(['/data_residency']);
  });

  it('embeddings take only, ignore, order, allow_fallbacks and data_residency', () => {
    const ok = { only: ['a'], ignore: ['b'], order: ['a'], allow_fallbacks: true, data_residency: 'ru' };
    expect(issues(embeddingsRoutingSchema, ok)).toEqual([]);
    expect(paths(embeddingsRoutingSchema, { ...ok, sort: 'price', max_price: {} }).sort()).toEqual(['/max_price', '/sort']);
  });
});

describe('POST /v1/responses body', () => {
  it('accepts a maximal body with every field', () => {
    expect(issues(responsesSchema, maximalResponsesBody)).toEqual([]);
  });

  it('accepts the minimal forms: string input with a model, or models alone', () => {
    expect(issues(responsesSchema, { model: 'm', input: 'Hi' })).toEqual([]);
    expect(issues(responsesSchema, { models: ['a', 'b'], input: 'Hi' })).toEqual([]);
  });

  it('accepts null where OpenAI allows it', () => {
    const body = { model: 'm', input: 'Hi', instructions: null, temperature: null, reasoning: { effort: null, summary: null }, previous_response_id: null, metadata: null };
    expect(issues(responsesSchema, body)).toEqual([]);
  });

  it('requires a model or a non-empty models', () => {
    expect(paths(responsesSchema, { input: 'Hi' })).toContain('/model');
    expect(paths(responsesSchema, { input: 'Hi', models: [] })).toContain('/model');
    expect(paths(responsesSchema, { input: 'Hi', models: Array.from({ length: 11 }, (_, i) => `m${i}`) })).toContain('/models');
  });

  it('names an unknown top-level field', () => {
    const found = issues(responsesSchema, { model: 'm', input: 'Hi', temprature: 1 });
    expect(found).toEqual([{ path: '/temprature', message: 'is not a known field' }]);
  });

  it.each([
    ['temperature', 2.5, '/temperature'],
    ['top_p', 1.5, '/top_p'],
    ['presence_penalty', -3, '/presence_penalty'],
    ['frequency_penalty', 2.1, '/frequency_penalty'],
    ['top_k', -1, '/top_k'],
    ['top_k', 1.5, '/top_k'],
    ['top_logprobs', 21, '/top_logprobs'],
    ['max_output_tokens', 0, '/max_output_tokens'],
    ['max_tool_calls', 0, '/max_tool_calls'],
    ['tool_choice', 'sometimes', '/tool_choice'],
    ['plugins', ['redactor'], '/plugins/0'],
    ['stream', 'yes', '/stream'],
    ['session_id', 5, '/session_id'],
    ['stream_options', { include_usage: true }, '/stream_options/include_usage'],
    ['text', { format: { type: 'xml' } }, '/text/format/type'],
    ['text', { format: { type: 'json_schema', schema: {} } }, '/text/format/name'],
    ['text', { verbosity: 'loud' }, '/text/verbosity'],
    ['reasoning', { effort: 'extreme' }, '/reasoning/effort'],
    ['reasoning', { summary: 'long' }, '/reasoning/summary'],
    ['reasoning', { max_tokens: -1 }, '/reasoning/max_tokens'],
    ['reasoning', { budget: 5 }, '/reasoning/budget'],
    ['stop_server_tools_when', [{ value: 3 }], '/stop_server_tools_when/0/type'],
    ['provider', { sort: 'fastest' }, '/provider/sort'],
    ['metadata', { k: 5 }, '/metadata/k'],
    ['metadata', Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])), '/metadata'],
    ['metadata', { ['k'.repeat(65)]: 'v' }, '/metadata'],
    ['metadata', { k: 'v'.repeat(513) }, '/metadata/k'],
    ['tools', [{ type: 'function', description: 'no name' }], '/tools/0/name'],
    ['tools', [{ type: 'function', name: 'bad name!' }], '/tools/0/name'],
    ['tools', [{ name: 'untyped' }], '/tools/0/type'],
    ['input', 5, '/input'],
    ['input', [{ role: 'robot', content: 'x' }], '/input/0/role'],
    ['input', [{ role: 'user' }], '/input/0/content'],
    ['input', [{ role: 'user', content: [{ type: 'input_image' }] }], '/input/0/content/0/image_url'],
    ['input', [{ role: 'user', content: [{ type: 'input_audio', data: 'x' }] }], '/input/0/content/0/type'],
    ['input', [{ type: 'function_call', call_id: 'c', name: 'f' }], '/input/0/arguments'],
    ['input', [{ type: 'function_call_output', output: 'x' }], '/input/0/call_id'],
  ] as Array<[string, unknown, string]>)('refuses a bad %s (%#)', (field, value, path) => {
    expect(paths(responsesSchema, { model: 'm', input: 'Hi', [field]: value })).toContain(path);
  });
});

describe('POST /v1/chat/completions body', () => {
  const maximal = {
    model: 'openai/gpt-4.1-mini',
    models: ['anthropic/claude-sonnet-4'],
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
      {
        role: 'user',
        name: 'ann',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'high' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
      { role: 'assistant', content: [{ type: 'text', text: 'It is 21.' }] },
    ],
    tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true } }],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    parallel_tool_calls: false,
    max_tokens: 100,
    max_completion_tokens: 200,
    temperature: 1,
    top_p: 0.5,
    top_k: 20,
    presence_penalty: 0,
    frequency_penalty: 0,
    stop: ['END', 'STOP'],
    seed: 42,
    n: 1,
    logprobs: true,
    top_logprobs: 3,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
    reasoning_effort: 'low',
    reasoning: { effort: 'high', max_tokens: 1000, enabled: true, exclude: false },
    stream: true,
    stream_options: { include_usage: true },
    user: 'u',
    metadata: { a: 'b' },
    provider: fullRouting,
    prompt_cache_key: 'k',
    session_id: 's',
    store: false,
    plugins: ['masker'],
    safety_identifier: 'sid',
    service_tier: 'auto',
    logit_bias: { '50256': -100 },
    verbosity: 'low',
    prompt_cache_retention: 'in_memory',
    modalities: ['text'],
  };

  it('accepts a maximal body and the tolerated SDK fields', () => {
    expect(issues(chatSchema, maximal)).toEqual([]);
  });

  it.each([
    ['n', 2, '/n'],
    ['stop', ['a', 'b', 'c', 'd', 'e'], '/stop'],
    ['functions', [], '/functions'],
    ['audio', { voice: 'alloy' }, '/audio'],
    ['modalities', ['text', 'audio'], '/modalities/1'],
    ['messages', [], '/messages'],
    ['messages', [{ role: 'function', content: 'x' }], '/messages/0/role'],
    ['messages', [{ role: 'tool', content: 'x' }], '/messages/0/tool_call_id'],
    ['messages', [{ role: 'user', content: [{ type: 'input_audio' }] }], '/messages/0/content/0/type'],
    ['messages', [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }], '/messages/0/content/0/image_url/url'],
    ['tools', [{ type: 'custom', custom: { name: 'x' } }], '/tools/0/type'],
    ['tool_choice', { type: 'function' }, '/tool_choice/function'],
    ['response_format', { type: 'json_schema' }, '/response_format/json_schema'],
    ['reasoning_effort', 'huge', '/reasoning_effort'],
    ['stream_options', { include_usage: 'yes' }, '/stream_options/include_usage'],
  ] as Array<[string, unknown, string]>)('refuses a bad %s (%#)', (field, value, path) => {
    expect(paths(chatSchema, { ...maximal, [field]: value })).toContain(path);
  });

  it('requires messages and a model', () => {
    expect(paths(chatSchema, { model: 'm' })).toEqual(['/messages']);
    expect(paths(chatSchema, { messages: [{ role: 'user', content: 'Hi' }] })).toContain('/model');
  });
});

describe('POST /v1/embeddings body', () => {
  it.each([
    ['a string', 'hello'],
    ['strings', ['a', 'b']],
    ['multimodal blocks', [{ content: [{ type: 'text', text: 'a cat' }, { type: 'image_url', image_url: { url: 'https://x/cat.png' } }] }]],
    ['a token array', [1, 2, 3]],
    ['a token array of 8192 tokens (one input, however many ids)', Array.from({ length: 8192 }, () => 7)],
    ['token arrays', [[1, 2, 3], [0]]],
  ])('accepts %s', (_name, input) => {
    const body = { model: 'm', input, encoding_format: 'base64', dimensions: 256, user: 'u', provider: { only: ['a'], data_residency: 'eu' } };
    expect(issues(embeddingsSchema, body)).toEqual([]);
  });

  it.each([
    ['a negative token id', { input: [1, -2] }, '/input/1'],
    ['a fractional token id', { input: [[1, 2.5]] }, '/input/0/1'],
    ['an empty token array', { input: [[1], []] }, '/input/1'],
    ['a token array over 8192 tokens', { input: [Array.from({ length: 8193 }, () => 1)] }, '/input/0'],
    ['one flat token array over 8192 tokens', { input: Array.from({ length: 8193 }, () => 1) }, '/input'],
    ['2049 token arrays', { input: Array.from({ length: 2049 }, () => [1]) }, '/input'],
    ['a token id past 2^31-1', { input: [2 ** 31] }, '/input/0'],
    ['an empty string', { input: '' }, '/input'],
    ['no inputs', { input: [] }, '/input'],
    ['2049 inputs', { input: Array.from({ length: 2049 }, () => 'x') }, '/input'],
    ['a bad block', { input: [{ content: [{ type: 'audio' }] }] }, '/input/0/content/0/type'],
    ['an image without url', { input: [{ content: [{ type: 'image_url', image_url: {} }] }] }, '/input/0/content/0/image_url/url'],
    ['dimensions 0', { input: 'x', dimensions: 0 }, '/dimensions'],
    ['an unknown encoding', { input: 'x', encoding_format: 'int8' }, '/encoding_format'],
    ['full routing', { input: 'x', provider: { sort: 'price' } }, '/provider/sort'],
  ])('refuses %s', (_name, extra, path) => {
    expect(paths(embeddingsSchema, { model: 'm', ...extra })).toContain(path);
  });

  it('requires model and input', () => {
    expect(paths(embeddingsSchema, {}).sort()).toEqual(['/input', '/model']);
  });

  it('refuses mixing token ids, token arrays and text, and more than 300000 tokens in all', () => {
    expect(embeddingsInputIssues([1, 'a'] as never)).toEqual([{ path: '/input/1', message: expect.stringContaining('integer') }]);
    expect(embeddingsInputIssues([[1], 'a'] as never)).toEqual([{ path: '/input/1', message: expect.stringContaining('token arrays') }]);
    expect(embeddingsInputIssues([[1], [2]])).toEqual([]);
    expect(embeddingsInputIssues(['a', 'b'])).toEqual([]);
    const many = Array.from({ length: 37 }, () => Array.from({ length: 8192 }, () => 7));
    expect(embeddingsInputIssues(many)).toEqual([{ path: '/input', message: expect.stringContaining('at most 300000 tokens') }]);
  });
});
