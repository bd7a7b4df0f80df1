import { anthropicAdapter } from '../../../../shared/providers/anthropic';
import { buildMessagesRequest } from '../../../../shared/providers/anthropic/request.mapper';
import type { TextRequest } from '../../../../shared/providers/provider.types';
import { UpstreamError } from '../../../../shared/providers/upstream-error';

const base: TextRequest = { model: 'claude-sonnet-4-5', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }], stream: false };

describe('Anthropic Messages request', () => {
  it('maps every TextRequest field the Messages API has', () => {
    const req: TextRequest = {
      model: 'claude-sonnet-4-5',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Answer in French.' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather where this photo was taken?' },
            { type: 'input_image', image_url: 'data:image/jpeg;base64,/9j/4AAQ' },
            { type: 'input_image', image_url: 'https://example.com/paris.jpg' },
            { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'notes.pdf' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', call_id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', call_id: 'toolu_2', name: 'get_time', arguments: '' },
        { type: 'function_call_output', call_id: 'toolu_1', output: '21°C' },
        { type: 'function_call_output', call_id: 'toolu_2', output: '14:00' },
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Use Celsius.' }] },
      ],
      tools: [{ type: 'function', name: 'get_weather', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }, { type: 'function', name: 'get_time' }],
      toolChoice: 'required',
      parallelToolCalls: false,
      maxOutputTokens: 20000,
      temperature: 1,
      topP: 0.95,
      topK: 40,
      stop: ['\n\nHuman:'],
      stream: true,
      user: 'user-42',
      seed: 1,
      presencePenalty: 1,
    };
    const spec = buildMessagesRequest(req, 'sk-ant-test');
    expect(spec).toMatchObject({ method: 'POST', path: '/messages' });
    expect(spec.headers).toMatchObject({ 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01', accept: 'text/event-stream' });
    expect(spec.body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 20000,
      system: 'Be brief.\n\nAnswer in French.\n\nUse Celsius.',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather where this photo was taken?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/paris.jpg' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'notes.pdf' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '21°C' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: '14:00' },
          ],
        },
      ],
      temperature: 1,
      top_p: 0.95,
      top_k: 40,
      stop_sequences: ['\n\nHuman:'],
      tools: [
        { name: 'get_weather', description: 'Weather by city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
        { name: 'get_time', input_schema: { type: 'object', properties: {} } },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      metadata: { user_id: 'user-42' },
      stream: true,
    });
    expect(spec.warnings).toEqual(['A system message in the middle of the conversation was moved to the system prompt: claude-sonnet-4-5 takes system instructions only before the conversation']);
  });

  it('keeps a mid-conversation system message in place for a model that takes one', () => {
    const input: TextRequest['input'] = [...base.input, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello' }] }, { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Now in French.' }] }];
    const spec = buildMessagesRequest({ ...base, model: 'claude-opus-4-8', input }, 'k');
    expect((spec.body as { messages: unknown[] }).messages.at(-1)).toEqual({ role: 'system', content: [{ type: 'text', text: 'Now in French.' }] });
    expect(spec.warnings).toBeUndefined();
  });

  it('leaves out what extended thinking forbids (temperature other than 1, top_k, top_p below 0.95), with warnings', () => {
    const spec = buildMessagesRequest({ ...base, reasoning: { effort: 'medium' }, temperature: 0.2, topK: 40, topP: 0.5, stream: true }, 'k', { defaultMaxOutputTokens: 64000 });
    expect(spec.body).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 8192 }, max_tokens: 64000 });
    expect(spec.body).not.toHaveProperty('temperature');
    expect(spec.body).not.toHaveProperty('top_k');
    expect(spec.body).not.toHaveProperty('top_p');
    expect(spec.warnings).toEqual([
      expect.stringMatching(/^temperature 0.2 was left out .*extended thinking/),
      expect.stringMatching(/^top_p 0.5 was left out .*below 0.95/),
      expect.stringMatching(/^top_k 40 was left out .*extended thinking/),
    ]);
    expect(buildMessagesRequest({ ...base, reasoning: { effort: 'medium' }, temperature: 1, topP: 0.97 }, 'k').body).toMatchObject({ temperature: 1, top_p: 0.97 });
  });

  it('answers a forced tool choice without thinking, which Anthropic forbids with it', () => {
    const tools: TextRequest['tools'] = [{ type: 'function', name: 'f' }];
    for (const toolChoice of ['required', { type: 'function', name: 'f' }] as const) {
      const spec = buildMessagesRequest({ ...base, tools, toolChoice, reasoning: { effort: 'high' } }, 'k');
      expect(spec.body).not.toHaveProperty('thinking');
      expect(spec.warnings).toEqual([expect.stringMatching(/^reasoning was left out .*forced tool choice/)]);
    }
    expect(buildMessagesRequest({ ...base, tools, toolChoice: 'auto', reasoning: { effort: 'high' } }, 'k').body).toHaveProperty('thinking');
  });

  it('refuses a conversation of system messages only (Anthropic needs a message)', () => {
    const onlySystem: TextRequest = { ...base, input: [{ type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Say hi.' }] }] };
    expect(() => buildMessagesRequest(onlySystem, 'k')).toThrow(/at least one user or assistant message/);
  });

  it('sizes a non-streaming call without a limit to finish within the provider timeout', () => {
    // 120 s at the SDK's 128,000 tokens an hour: 4,266 tokens, not the endpoint's 64,000.
    expect(buildMessagesRequest(base, 'k', { defaultMaxOutputTokens: 64000, timeoutMs: 120_000 }).body).toMatchObject({ max_tokens: 4266 });
    expect(buildMessagesRequest({ ...base, stream: true }, 'k', { defaultMaxOutputTokens: 64000, timeoutMs: 120_000 }).body).toMatchObject({ max_tokens: 64000 });
    expect(buildMessagesRequest({ ...base, maxOutputTokens: 30000 }, 'k', { defaultMaxOutputTokens: 64000, timeoutMs: 120_000 }).body).toMatchObject({ max_tokens: 30000 });
    expect(buildMessagesRequest(base, 'k', { defaultMaxOutputTokens: 64000 }).body).toMatchObject({ max_tokens: 64000 }); // a batch line: no timeout
    expect(buildMessagesRequest(base, 'k', { defaultMaxOutputTokens: 64000, timeoutMs: 10_000 }).body).toMatchObject({ max_tokens: 4096 }); // never below the default
    const thinking = buildMessagesRequest({ ...base, reasoning: { effort: 'high' } }, 'k', { defaultMaxOutputTokens: 64000, timeoutMs: 120_000 }).body;
    expect(thinking).toMatchObject({ max_tokens: 4266, thinking: { budget_tokens: 2133 } });
  });

  it('sends the safety identifier, not the deprecated user, as metadata.user_id', () => {
    expect(buildMessagesRequest({ ...base, user: 'u', safetyIdentifier: 's' }, 'k').body).toMatchObject({ metadata: { user_id: 's' } });
  });

  it('uses the default max_tokens, or the caller’s, when the request has none', () => {
    expect(buildMessagesRequest(base, 'k').body).toEqual({ model: 'claude-sonnet-4-5', max_tokens: 4096, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] });
    expect(buildMessagesRequest(base, 'k', { defaultMaxOutputTokens: 1000 }).body).toMatchObject({ max_tokens: 1000 });
  });

  it('keeps max_tokens above the thinking budget', () => {
    expect(buildMessagesRequest({ ...base, reasoning: { maxTokens: 10000 } }, 'k', { defaultMaxOutputTokens: 64000 }).body).toMatchObject({ max_tokens: 64000, thinking: { budget_tokens: 10000 } });
    const small = buildMessagesRequest({ ...base, reasoning: { maxTokens: 10000 } }, 'k');
    expect(small.body).toMatchObject({ max_tokens: 4096, thinking: { budget_tokens: 2048 } });
    expect(small.warnings).toEqual([expect.stringMatching(/^Value 10000 of parameter 'reasoning.max_tokens' is not offered .*2048 was used instead/)]);
    expect(buildMessagesRequest({ ...base, maxOutputTokens: 3000, reasoning: { effort: 'high' } }, 'k').body).toMatchObject({ max_tokens: 3000, thinking: { budget_tokens: 2999 } });
    expect(buildMessagesRequest({ ...base, maxOutputTokens: 500, reasoning: { effort: 'high' } }, 'k').body).not.toHaveProperty('thinking');
    expect(buildMessagesRequest({ ...base, reasoning: { enabled: false, effort: 'high' } }, 'k').body).not.toHaveProperty('thinking');
  });

  it('maps each tool choice', () => {
    const choice = (toolChoice: TextRequest['toolChoice']) => (buildMessagesRequest({ ...base, toolChoice }, 'k').body as { tool_choice?: unknown }).tool_choice;
    expect(choice('auto')).toEqual({ type: 'auto' });
    expect(choice('none')).toEqual({ type: 'none' });
    expect(choice({ type: 'function', name: 'f' })).toEqual({ type: 'tool', name: 'f' });
    expect(choice(undefined)).toBeUndefined();
  });

  it('refuses function call arguments that are not JSON', () => {
    const req: TextRequest = { ...base, input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{oops' }] };
    expect(() => buildMessagesRequest(req, 'k')).toThrow(UpstreamError);
  });

  it('declares text only in the manifest', () => {
    expect(anthropicAdapter.supports).toMatchObject({ text: true, textStream: true, embeddings: false, images: false, logprobs: false });
    expect(anthropicAdapter.embeddings).toBeUndefined();
  });
});
