import { openaiAdapter } from '../../../../shared/providers/openai';
import { buildResponsesRequest } from '../../../../shared/providers/openai/request.mapper';
import { parseResponsesResponse } from '../../../../shared/providers/openai/stream.mapper';
import type { TextRequest } from '../../../../shared/providers/provider.types';
import { RequestChecker } from '../../../../fakes/request-check';
import { runStream, sse } from '../stream-helper';

const base: TextRequest = { model: 'o4-mini', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }], stream: false };
const checker = new RequestChecker();

describe('OpenAI Responses API request (endpoints with responsesApi)', () => {
  it('is what the adapter sends for an endpoint that speaks the Responses API, chat completions otherwise', () => {
    expect(openaiAdapter.text!.buildRequest(base, 'k', { responsesApi: true }).path).toBe('/responses');
    expect(openaiAdapter.text!.buildRequest(base, 'k').path).toBe('/chat/completions');
  });

  it('carries what only the Responses API has: reasoning summaries, encrypted reasoning, verbosity, service tier', () => {
    const req: TextRequest = {
      model: 'gpt-5',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather?' }, { type: 'input_image', image_url: 'https://example.com/a.png' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'c1', output: '21' },
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Use Celsius.' }] },
      ],
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
      toolChoice: { type: 'function', name: 'get_weather' },
      parallelToolCalls: false,
      maxOutputTokens: 800,
      reasoning: { effort: 'low', summary: 'auto' },
      textFormat: { type: 'json_schema', name: 'w', schema: { type: 'object' }, strict: true },
      verbosity: 'low',
      serviceTier: 'flex',
      include: ['reasoning.encrypted_content'],
      safetyIdentifier: 'hash-1',
      promptCacheKey: 'pk',
      stream: true,
    };
    const spec = buildResponsesRequest(req, 'sk');
    expect(spec).toMatchObject({ method: 'POST', path: '/responses' });
    expect(spec.headers).toMatchObject({ authorization: 'Bearer sk', accept: 'text/event-stream' });
    expect(spec.body).toEqual({
      model: 'gpt-5',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather?' }, { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' }] },
        { type: 'message', role: 'assistant', content: 'Checking.' },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'c1', output: '21' },
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Use Celsius.' }] },
      ],
      store: false,
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }],
      parallel_tool_calls: false,
      tool_choice: { type: 'function', name: 'get_weather' },
      max_output_tokens: 800,
      reasoning: { effort: 'low', summary: 'auto' },
      text: { format: { type: 'json_schema', name: 'w', schema: { type: 'object' }, strict: true }, verbosity: 'low' },
      include: ['reasoning.encrypted_content'],
      safety_identifier: 'hash-1',
      prompt_cache_key: 'pk',
      service_tier: 'flex',
      stream: true,
    });
    expect(spec.warnings).toBeUndefined();
    expect(checker.check('openai', 'POST /responses', spec.body)).toBeUndefined();
  });

  it('gives earlier reasoning back as given, without an id (the encrypted content names its item)', () => {
    const input: TextRequest['input'] = [
      ...base.input,
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Only a summary.' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello' }] },
    ];
    const spec = buildResponsesRequest({ ...base, input }, 'k');
    expect((spec.body as { input: unknown[] }).input.slice(1)).toEqual([
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Only a summary.' }] },
      { type: 'message', role: 'assistant', content: 'Hello' },
    ]);
    expect(spec.warnings).toBeUndefined();
    expect(checker.check('openai', 'POST /responses', spec.body)).toBeUndefined();
  });

  it('leaves out what the Responses API lacks, with warnings, and keeps max_output_tokens at its minimum', () => {
    const spec = buildResponsesRequest({ ...base, model: 'gpt-4.1', stop: ['x'], seed: 1, presencePenalty: 1, maxOutputTokens: 5, temperature: 0.5, logprobs: true, topLogprobs: 2 }, 'k');
    expect(spec.body).toMatchObject({ max_output_tokens: 16, temperature: 0.5, include: ['message.output_text.logprobs'], top_logprobs: 2 });
    for (const f of ['stop', 'seed', 'presence_penalty']) expect(spec.body).not.toHaveProperty(f);
    expect(spec.warnings).toEqual([
      expect.stringMatching(/^Value 5 of parameter 'max_output_tokens' .* 16 was used instead/),
      expect.stringMatching(/^stop was left out/),
      expect.stringMatching(/^seed was left out/),
      expect.stringMatching(/^presence_penalty was left out/),
    ]);
    expect(checker.check('openai', 'POST /responses', spec.body)).toBeUndefined();
  });
});

describe('OpenAI Responses API replies', () => {
  const response = {
    id: 'resp_1',
    object: 'response',
    status: 'completed',
    model: 'o4-mini-2025-04-16',
    service_tier: 'flex',
    output: [
      { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' },
      { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [], logprobs: [] }] },
    ],
    usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 4 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 20 }, total_tokens: 40 },
  };

  it('reads a response object: text, reasoning summary and encrypted reasoning, usage with cached and reasoning tokens', () => {
    expect(openaiAdapter.text!.parseResponse(response)).toEqual({
      output: [
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' },
        { type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'Hello' }] },
      ],
      finishReason: 'stop',
      usage: { inputTokens: 10, outputTokens: 30, cachedTokens: 4, reasoningTokens: 20 },
      modelVersion: 'o4-mini-2025-04-16',
      upstreamId: 'resp_1',
      serviceTier: 'flex',
    });
  });

  it('reads function calls and an incomplete response', () => {
    const call = { ...response, output: [{ id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}', status: 'completed' }] };
    expect(parseResponsesResponse(call)).toMatchObject({ output: [{ type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f', arguments: '{}' }], finishReason: 'tool_calls' });
    expect(parseResponsesResponse({ ...response, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } }).finishReason).toBe('length');
  });

  it('reads a stream by its event names: text, reasoning, calls, then usage and finish', () => {
    const frame = (type: string, data: Record<string, unknown>): [string, unknown] => [type, { type, ...data }];
    const events = runStream(openaiAdapter.text!.createStreamParser(), sse([
      frame('response.created', { response: { id: 'resp_1', status: 'in_progress' } }),
      frame('response.reasoning_summary_text.delta', { item_id: 'rs_1', output_index: 0, summary_index: 0, delta: 'Thinking' }),
      frame('response.output_text.delta', { item_id: 'msg_1', output_index: 1, content_index: 0, delta: 'Hel' }),
      frame('response.output_text.delta', { item_id: 'msg_1', output_index: 1, content_index: 0, delta: 'lo' }),
      frame('response.output_item.added', { output_index: 2, item: { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f', arguments: '' } }),
      frame('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 2, delta: '{}' }),
      frame('response.completed', { response: { ...response, output: [] } }),
    ]));
    expect(events).toEqual([
      { type: 'reasoning_delta', text: 'Thinking' },
      { type: 'text_delta', text: 'Hel' },
      { type: 'text_delta', text: 'lo' },
      { type: 'tool_call_start', index: 0, callId: 'call_1', name: 'f' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: '{}' },
      { type: 'usage', usage: { inputTokens: 10, outputTokens: 30, cachedTokens: 4, reasoningTokens: 20 } },
      { type: 'finish', finishReason: 'tool_calls', modelVersion: 'o4-mini-2025-04-16', serviceTier: 'flex' },
    ]);
  });

  it('ends each reasoning item of a stream with its encrypted reasoning (response.output_item.done)', () => {
    const frame = (type: string, data: Record<string, unknown>): [string, unknown] => [type, { type, ...data }];
    const reasoning = (summary: unknown[], encrypted?: string | null) => ({ id: 'rs_1', type: 'reasoning', summary, ...(encrypted !== undefined && { encrypted_content: encrypted }) });
    const events = runStream(openaiAdapter.text!.createStreamParser(), sse([
      frame('response.output_item.added', { output_index: 0, item: reasoning([], null) }),
      frame('response.reasoning_summary_text.delta', { item_id: 'rs_1', output_index: 0, summary_index: 0, delta: 'Thought.' }),
      frame('response.output_item.done', { output_index: 0, item: reasoning([{ type: 'summary_text', text: 'Thought.' }], 'ZW5jMQ==') }),
      frame('response.output_item.added', { output_index: 1, item: reasoning([], null) }),
      frame('response.output_item.done', { output_index: 1, item: reasoning([], 'ZW5jMg==') }),
      frame('response.output_item.done', { output_index: 2, item: reasoning([]) }),
      frame('response.output_item.done', { output_index: 3, item: { id: 'msg_1', type: 'message', role: 'assistant', content: [] } }),
      frame('response.completed', { response: { ...response, output: [] } }),
    ]));
    expect(events.slice(0, 3)).toEqual([
      { type: 'reasoning_delta', text: 'Thought.' },
      { type: 'reasoning_end', encryptedContent: 'ZW5jMQ==' },
      { type: 'reasoning_end', encryptedContent: 'ZW5jMg==' },
    ]);
    expect(events.slice(3).map((e) => e.type)).toEqual(['usage', 'finish']);
  });

  it('reports a stream that fails or stops before response.completed as an error', () => {
    const failed = runStream(openaiAdapter.text!.createStreamParser(), sse([['response.failed', { type: 'response.failed', response: { error: { message: 'boom' } } }]]));
    expect(failed).toEqual([expect.objectContaining({ type: 'error', message: 'boom' })]);
    const cut = runStream(openaiAdapter.text!.createStreamParser(), sse([['response.output_text.delta', { type: 'response.output_text.delta', delta: 'a' }]]));
    expect(cut).toEqual([{ type: 'text_delta', text: 'a' }, expect.objectContaining({ type: 'error' })]);
  });
});
