import { chatToCanonical } from '../../../shared/formats/chat.mapper';
import { moneyJson } from '../../../shared/formats/format-utils';
import { responsesToCanonical } from '../../../shared/formats/responses-request.mapper';
import { AppError } from '../../../shared/errors/app-error';
import type { InputItem } from '../../../shared/providers/provider.types';
import type { ChatBody } from '../../../shared/schemas/chat.schema';
import type { ResponsesBody } from '../../../shared/schemas/responses.schema';
import { maximalResponsesBody } from './fixtures';

describe('responsesToCanonical', () => {
  it('turns a string input into one user message and sets nothing optional', () => {
    const req = responsesToCanonical({ model: 'm', input: 'Hello' });
    expect(req).toEqual({
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }],
      stream: false,
      requestedParameters: [],
      warnings: [],
    });
  });

  it('maps every field of a maximal body', () => {
    const earlier: InputItem = { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Earlier.' }] };
    const req = responsesToCanonical(maximalResponsesBody, [], new Map([['msg_0', [earlier]]]));
    expect(req.instructions).toBe('Be brief.');
    expect(req.input).toEqual([
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Answer in French.' }] },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is on this picture?' },
          { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'low' },
          { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'A cat.' }] },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'thinking' }] },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '{"temp":21}' },
      earlier,
    ]);
    expect(req.tools).toEqual([
      {
        type: 'function',
        name: 'get_weather',
        description: 'Weather by city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        strict: true,
      },
    ]);
    expect(req.toolChoice).toBe('auto');
    expect(req.parallelToolCalls).toBe(true);
    expect(req.textFormat).toEqual({ type: 'json_schema', name: 'weather', schema: { type: 'object' }, strict: true, description: 'A weather report' });
    expect(req.reasoning).toEqual({ effort: 'medium', summary: 'auto', maxTokens: 2048, enabled: true });
    expect(req).toMatchObject({
      maxOutputTokens: 1024,
      temperature: 0.7,
      topP: 0.9,
      topK: 40,
      presencePenalty: 0.5,
      frequencyPenalty: -0.5,
      logprobs: true,
      topLogprobs: 5,
      stream: true,
      user: 'user-1',
      promptCacheKey: 'cache-1',
    });
    expect(req.requestedParameters).toEqual([
      'temperature',
      'top_p',
      'top_k',
      'presence_penalty',
      'frequency_penalty',
      'tools',
      'reasoning',
      'response_format',
      'logprobs',
      'top_logprobs',
      'stream',
    ]);
    expect(req.warnings).toEqual([
      "tool type 'web_search_preview' is not supported and was ignored",
    ]);
  });

  it('puts what an item_reference stands for in its place, and refuses an unknown one with 400 naming it', () => {
    const said: InputItem = { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hi.' }] };
    const body: ResponsesBody = { model: 'm', input: [{ role: 'user', content: 'a' }, { type: 'item_reference', id: 'msg_x_0' }, { role: 'user', content: 'b' }] };
    expect(responsesToCanonical(body, [], new Map([['msg_x_0', [said]]])).input.map((i) => (i.type === 'message' ? i.role : i.type))).toEqual(['user', 'assistant', 'user']);
    expect(() => responsesToCanonical(body)).toThrow(expect.objectContaining({ status: 400, message: "Item reference 'msg_x_0' not found" }));
  });

  it('puts the stored conversation before the new input', () => {
    const history: InputItem[] = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'My name is Ann.' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hi Ann.' }] },
    ];
    const req = responsesToCanonical({ model: 'm', input: 'What is my name?', previous_response_id: 'resp_1' }, history);
    expect(req.input.map((i) => (i.type === 'message' ? i.content[0] : i))).toEqual([
      { type: 'input_text', text: 'My name is Ann.' },
      { type: 'output_text', text: 'Hi Ann.' },
      { type: 'input_text', text: 'What is my name?' },
    ]);
  });

  it('keeps reasoning items given back, their summary and encrypted reasoning, not their id; one that carries nothing goes', () => {
    const req = responsesToCanonical({
      model: 'm',
      input: [
        { role: 'user', content: 'a' },
        { type: 'reasoning', id: 'rs_x_0', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' },
        { type: 'reasoning', id: 'rs_x_1', summary: [{ text: 'Only a summary.' }], encrypted_content: null },
        { type: 'reasoning', id: 'rs_x_2', summary: [] },
        { role: 'assistant', content: 'b' },
      ],
    });
    expect(req.input.filter((i) => i.type === 'reasoning')).toEqual([
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Only a summary.' }] },
    ]);
    expect(req.input.map((i) => i.type)).toEqual(['message', 'reasoning', 'reasoning', 'message']);
  });

  it('refuses a request with no input at all', () => {
    expect(() => responsesToCanonical({ model: 'm' })).toThrow(AppError);
    expect(responsesToCanonical({ model: 'm' }, [{ type: 'function_call_output', call_id: 'c', output: 'x' }]).input).toHaveLength(1);
  });

  it('reads assistant string content as output text and joins tool output parts', () => {
    const req = responsesToCanonical({
      model: 'm',
      input: [
        { role: 'assistant', content: 'Earlier answer' },
        { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_text', text: 'a' }, { type: 'input_text', text: 'b' }] },
        { role: 'user', content: [{ type: 'refusal', refusal: 'no' }] },
      ],
    });
    expect(req.input).toEqual([
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Earlier answer' }] },
      { type: 'function_call_output', call_id: 'c1', output: 'ab' },
      { type: 'message', role: 'user', content: [{ type: 'output_text', text: 'no' }] },
    ]);
  });

  it.each([
    [{ effort: 'none' }, { enabled: false }, false],
    [{ effort: 'xhigh' }, { effort: 'max' }, true],
    [{ effort_level: 'max' }, { effort: 'max' }, true],
    [{ type: 'disabled' }, { enabled: false }, false],
    [{ type: 'adaptive', summary: 'detailed' }, { summary: 'detailed', enabled: true }, true],
    [{ effort: null, summary: null }, undefined, false],
  ] as Array<[ResponsesBody['reasoning'], unknown, boolean]>)('maps reasoning %j', (reasoning, expected, requested) => {
    const req = responsesToCanonical({ model: 'm', input: 'x', reasoning });
    expect(req.reasoning).toEqual(expected);
    expect(req.requestedParameters.includes('reasoning')).toBe(requested);
  });

  it('maps tool_choice forms; allowed_tools narrows the tools', () => {
    const tools: ResponsesBody['tools'] = [
      { type: 'function', name: 'a' },
      { type: 'function', name: 'b', description: null, parameters: null, strict: null },
    ];
    expect(responsesToCanonical({ model: 'm', input: 'x', tools, tool_choice: { type: 'function', name: 'b' } })).toMatchObject({
      toolChoice: { type: 'function', name: 'b' },
      requestedParameters: ['tools', 'tool_choice'],
    });
    const allowed = responsesToCanonical({
      model: 'm',
      input: 'x',
      tools,
      tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'b' }] },
    });
    expect(allowed.tools).toEqual([{ type: 'function', name: 'b' }]);
    expect(allowed.toolChoice).toBe('required');
    const hosted = responsesToCanonical({ model: 'm', input: 'x', tools, tool_choice: { type: 'web_search_preview' }, parallel_tool_calls: false });
    expect(hosted.toolChoice).toBeUndefined();
    expect(hosted.warnings).toEqual(["tool_choice of type 'web_search_preview' is not supported and was ignored"]);
    expect(hosted.requestedParameters).toEqual(['tools', 'parallel_tool_calls']);
  });

  it('asks for logprobs from include alone, and keeps safety_identifier apart from the deprecated user', () => {
    const req = responsesToCanonical({ model: 'm', input: 'x', include: ['message.output_text.logprobs'], safety_identifier: 's', text: { format: { type: 'json_object' } } });
    expect(req).toMatchObject({ logprobs: true, safetyIdentifier: 's', textFormat: { type: 'json_object' } });
    expect(req.user).toBeUndefined();
    expect(req.topLogprobs).toBeUndefined();
    expect(req.requestedParameters).toEqual(['response_format', 'logprobs']);
  });

  it('treats nulls as absent', () => {
    const req = responsesToCanonical({ model: 'm', input: 'x', temperature: null, top_p: null, max_output_tokens: null, instructions: null, top_logprobs: null });
    expect(req).toEqual({ input: expect.any(Array), stream: false, requestedParameters: [], warnings: [] });
  });
});

describe('chatToCanonical', () => {
  const body: ChatBody = {
    model: 'm',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Weather here?' },
          { type: 'image_url', image_url: { url: 'https://example.com/city.png', detail: 'low' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
        ],
      },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
      { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '14:00' }] },
      { role: 'system', content: 'Now summarise.' },
    ],
    tools: [
      { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true } },
      { type: 'function', function: { name: 'get_time' } },
    ],
    tool_choice: 'required',
    parallel_tool_calls: false,
    max_tokens: 100,
    max_completion_tokens: 200,
    temperature: 0.3,
    top_p: 0.8,
    top_k: 10,
    presence_penalty: 0.1,
    frequency_penalty: 0.2,
    stop: 'END',
    seed: 7,
    logprobs: true,
    top_logprobs: 2,
    response_format: { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' }, strict: true, description: 'd' } },
    reasoning_effort: 'high',
    stream: true,
    stream_options: { include_usage: true },
    user: 'u1',
    prompt_cache_key: 'pk',
  };

  it('maps messages, tools and every sampling field', () => {
    const req = chatToCanonical(body);
    expect(req.instructions).toBe('Be brief.\n\nAnswer in French.');
    expect(req.input).toEqual([
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'Weather here?' },
          { type: 'input_image', image_url: 'https://example.com/city.png', detail: 'low' },
          { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'call_2', name: 'get_time', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: '{"temp":21}' },
      { type: 'function_call_output', call_id: 'call_2', output: '14:00' },
      { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Now summarise.' }] },
    ]);
    expect(req.tools).toEqual([
      { type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true },
      { type: 'function', name: 'get_time' },
    ]);
    expect(req).toMatchObject({
      toolChoice: 'required',
      parallelToolCalls: false,
      maxOutputTokens: 200,
      temperature: 0.3,
      topP: 0.8,
      topK: 10,
      presencePenalty: 0.1,
      frequencyPenalty: 0.2,
      stop: ['END'],
      seed: 7,
      logprobs: true,
      topLogprobs: 2,
      textFormat: { type: 'json_schema', name: 'w', schema: { type: 'object' }, strict: true, description: 'd' },
      reasoning: { effort: 'high' },
      stream: true,
      user: 'u1',
      promptCacheKey: 'pk',
    });
    expect(req.requestedParameters).toEqual([
      'temperature',
      'top_p',
      'top_k',
      'presence_penalty',
      'frequency_penalty',
      'stop',
      'seed',
      'tools',
      'tool_choice',
      'parallel_tool_calls',
      'reasoning',
      'response_format',
      'logprobs',
      'top_logprobs',
      'stream',
    ]);
  });

  it('takes max_tokens when max_completion_tokens is absent, and a named tool choice', () => {
    const req = chatToCanonical({
      model: 'm',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 50,
      tools: [{ type: 'function', function: { name: 'f' } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      stop: ['a', 'b'],
    });
    expect(req).toMatchObject({ maxOutputTokens: 50, toolChoice: { type: 'function', name: 'f' }, stop: ['a', 'b'] });
  });

  it('merges the reasoning object with reasoning_effort (the object wins)', () => {
    const messages: ChatBody['messages'] = [{ role: 'user', content: 'Hi' }];
    expect(chatToCanonical({ model: 'm', messages, reasoning: { max_tokens: 500 }, reasoning_effort: 'low' }).reasoning).toEqual({ effort: 'low', maxTokens: 500 });
    expect(chatToCanonical({ model: 'm', messages, reasoning: { effort: 'minimal' }, reasoning_effort: 'low' }).reasoning).toEqual({ effort: 'minimal' });
    expect(chatToCanonical({ model: 'm', messages, reasoning_effort: 'none' }).reasoning).toEqual({ enabled: false });
  });

  it('keeps lone system messages as messages, and sends nothing for top_logprobs without logprobs', () => {
    const req = chatToCanonical({ model: 'm', messages: [{ role: 'system', content: 'Say hi.' }], top_logprobs: 3 });
    expect(req.instructions).toBeUndefined();
    expect(req.input).toEqual([{ type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Say hi.' }] }]);
    expect(req.logprobs).toBeUndefined();
    expect(req.requestedParameters).toEqual([]);
  });

  it('maps json_object and a json_schema without a schema', () => {
    const messages: ChatBody['messages'] = [{ role: 'user', content: 'Hi' }];
    expect(chatToCanonical({ model: 'm', messages, response_format: { type: 'json_object' } }).textFormat).toEqual({ type: 'json_object' });
    expect(chatToCanonical({ model: 'm', messages, response_format: { type: 'json_schema', json_schema: { name: 'x' } } }).textFormat).toEqual({
      type: 'json_schema',
      name: 'x',
      schema: {},
    });
  });
});

describe('moneyJson', () => {
  it.each([
    ['0.0000004', 0],
    ['0.0000005', 0.000001],
    ['1.2345675', 1.234568],
    ['-1.2345675', -1.234568],
    ['12', 12],
    ['0.1', 0.1],
    ['1e-7', 0],
    ['5e-7', 0.000001],
    ['99.9999995', 100],
  ])('%s → %s', (value, expected) => {
    expect(moneyJson(value)).toBe(expected);
  });

  it('refuses what is not a decimal number', () => {
    expect(() => moneyJson('1,5')).toThrow(TypeError);
  });
});
