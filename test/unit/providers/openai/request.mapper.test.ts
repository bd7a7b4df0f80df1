import { openaiAdapter } from '../../../../shared/providers/openai';
import { buildChatCompletionRequest, buildEmbeddingRequest, buildImageRequest } from '../../../../shared/providers/openai/request.mapper';
import type { TextRequest } from '../../../../shared/providers/provider.types';
import { UpstreamError } from '../../../../shared/providers/upstream-error';

const base: TextRequest = { model: 'gpt-4.1-mini', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }], stream: false };

describe('OpenAI chat completions request', () => {
  it('maps every TextRequest field to the chat completions body', () => {
    const req: TextRequest = {
      model: 'gpt-5-mini',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Answer in French.' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is in this picture, and the weather in Paris?' },
            { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'low' },
            { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', call_id: 'call_2', name: 'get_time', arguments: '{"tz":"Europe/Paris"}' },
        { type: 'function_call_output', call_id: 'call_1', output: '{"temp":21}' },
        { type: 'function_call_output', call_id: 'call_2', output: '14:00' },
      ],
      tools: [{ type: 'function', name: 'get_weather', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true }],
      toolChoice: { type: 'function', name: 'get_weather' },
      parallelToolCalls: false,
      maxOutputTokens: 256,
      temperature: 0.2,
      topP: 0.9,
      topK: 40,
      presencePenalty: 0.1,
      frequencyPenalty: 0.3,
      stop: ['END'],
      seed: 7,
      reasoning: { effort: 'low' },
      textFormat: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true },
      logprobs: true,
      topLogprobs: 3,
      stream: true,
      user: 'user-42',
      promptCacheKey: 'conv-9',
    };
    const spec = buildChatCompletionRequest(req, 'sk-test');
    expect(spec.method).toBe('POST');
    expect(spec.path).toBe('/chat/completions');
    expect(spec.headers.authorization).toBe('Bearer sk-test');
    expect(spec.headers.accept).toBe('text/event-stream');
    expect(spec.body).toEqual({
      model: 'gpt-5-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'system', content: 'Answer in French.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture, and the weather in Paris?' },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"tz":"Europe/Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
        { role: 'tool', tool_call_id: 'call_2', content: '14:00' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'Weather by city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true },
        },
      ],
      parallel_tool_calls: false,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      max_completion_tokens: 256,
      temperature: 0.2,
      top_p: 0.9,
      presence_penalty: 0.1,
      frequency_penalty: 0.3,
      stop: ['END'],
      seed: 7,
      reasoning_effort: 'low',
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
      logprobs: true,
      top_logprobs: 3,
      user: 'user-42',
      prompt_cache_key: 'conv-9',
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('sends a lone text part as a string and leaves unset options out', () => {
    const spec = buildChatCompletionRequest({ ...base, parallelToolCalls: true }, 'k');
    expect(spec.body).toEqual({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'Hi' }] });
    expect(spec.headers.accept).toBe('application/json');
  });

  it('starts a new assistant message for a function call that follows a tool result', () => {
    const spec = buildChatCompletionRequest(
      {
        ...base,
        input: [
          { type: 'function_call', call_id: 'a', name: 'f', arguments: '{}' },
          { type: 'function_call_output', call_id: 'a', output: '1' },
          { type: 'function_call', call_id: 'b', name: 'f', arguments: '{}' },
        ],
      },
      'k',
    );
    expect((spec.body as { messages: Array<{ role: string }> }).messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
  });

  it('maps json_object, string tool choices and the max effort', () => {
    const spec = buildChatCompletionRequest({ ...base, model: 'o4-mini', textFormat: { type: 'json_object' }, toolChoice: 'required', reasoning: { effort: 'max' } }, 'k');
    expect(spec.body).toMatchObject({ response_format: { type: 'json_object' }, tool_choice: 'required', reasoning_effort: 'high' });
    expect(buildChatCompletionRequest({ ...base, model: 'gpt-5.2', reasoning: { effort: 'max' } }, 'k').body).toMatchObject({ reasoning_effort: 'xhigh' });
  });

  it('sends each model family an effort it takes (the nearest above, with a warning)', () => {
    const sent = (model: string, reasoning: TextRequest['reasoning']) => {
      const spec = buildChatCompletionRequest({ ...base, model, reasoning }, 'k');
      return [(spec.body as { reasoning_effort?: string }).reasoning_effort, spec.warnings ?? []];
    };
    expect(sent('o4-mini', { effort: 'minimal' })).toEqual(['low', [`Value "minimal" of parameter 'reasoning.effort' is not offered by o4-mini: "low" was used instead`]]);
    expect(sent('o4-mini', { enabled: false })).toEqual(['low', [`Value "none" of parameter 'reasoning.effort' is not offered by o4-mini (it cannot turn reasoning off): "low" was used instead`]]);
    expect(sent('gpt-5-mini', { effort: 'minimal' })).toEqual(['minimal', []]);
    expect(sent('gpt-5.1', { effort: 'minimal' })).toEqual(['low', [expect.stringMatching(/not offered by gpt-5.1/)]]);
    expect(sent('gpt-5.1', { enabled: false })).toEqual(['none', []]);
    expect(sent('gpt-4.1-mini', { effort: 'high' })).toEqual([undefined, [expect.stringMatching(/^reasoning was left out .*does not reason/)]]);
    expect(sent('deepseek-reasoner', { effort: 'max' })).toEqual(['high', []]); // a compatible server's model: as before
  });

  it('keeps safety_identifier apart from user, and sends verbosity only to a model that takes it', () => {
    const spec = buildChatCompletionRequest({ ...base, user: 'u', safetyIdentifier: 's', serviceTier: 'flex', verbosity: 'low' }, 'k');
    expect(spec.body).toMatchObject({ user: 'u', safety_identifier: 's', service_tier: 'flex' });
    expect(spec.body).not.toHaveProperty('verbosity');
    expect(spec.warnings).toEqual([expect.stringMatching(/^verbosity "low" was left out of the call to gpt-4.1-mini/)]);
    expect(buildChatCompletionRequest({ ...base, model: 'gpt-5', verbosity: 'low' }, 'k').body).toMatchObject({ verbosity: 'low' });
  });

  it('refuses a file by URL, which chat completions cannot take', () => {
    const req: TextRequest = { ...base, input: [{ type: 'message', role: 'user', content: [{ type: 'input_file', file_url: 'https://x/a.pdf' }] }] };
    expect(() => buildChatCompletionRequest(req, 'k')).toThrow(UpstreamError);
    try {
      buildChatCompletionRequest(req, 'k');
    } catch (e) {
      expect((e as UpstreamError).failure).toMatchObject({ reason: 'bad_request', fallback: true });
    }
  });
});

describe('OpenAI embeddings and images requests', () => {
  it('always asks for float embeddings', () => {
    const spec = buildEmbeddingRequest({ model: 'text-embedding-3-small', inputs: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], dimensions: 256, user: 'u' }, 'k');
    expect(spec).toMatchObject({ method: 'POST', path: '/embeddings' });
    expect(spec.body).toEqual({ model: 'text-embedding-3-small', input: ['a', 'b'], encoding_format: 'float', dimensions: 256, user: 'u' });
    const tokens = buildEmbeddingRequest({ model: 'text-embedding-3-small', inputs: [{ type: 'tokens', tokens: [1, 2] }, { type: 'tokens', tokens: [3] }] }, 'k');
    expect(tokens.body).toEqual({ model: 'text-embedding-3-small', input: [[1, 2], [3]], encoding_format: 'float' });
    // A multimodal block of text parts only is its text; one with an image is refused before any call.
    const blocks = buildEmbeddingRequest({ model: 'text-embedding-3-small', inputs: [{ type: 'multimodal', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }, { type: 'text', text: 'c' }] }, 'k');
    expect(blocks.body).toMatchObject({ input: ['a\nb', 'c'] });
    expect(() => buildEmbeddingRequest({ model: 'm', inputs: [{ type: 'multimodal', content: [{ type: 'text', text: 'a' }, { type: 'image_url', url: 'https://x/y.png' }] }] }, 'k')).toThrow(/no images/);
  });

  it('maps every image option', () => {
    const spec = buildImageRequest(
      { model: 'gpt-image-1', prompt: 'a fox', n: 2, size: '1024x1024', quality: 'high', style: 'vivid', background: 'transparent', outputFormat: 'webp', outputCompression: 80, user: 'u' },
      'k',
    );
    expect(spec.path).toBe('/images/generations');
    expect(spec.body).toEqual({
      model: 'gpt-image-1', prompt: 'a fox', n: 2, size: '1024x1024', quality: 'high', style: 'vivid', background: 'transparent',
      output_format: 'webp', output_compression: 80, user: 'u',
    });
  });

  it('declares its operations in the manifest', () => {
    expect(openaiAdapter.supports).toEqual({ text: true, textStream: true, embeddings: true, images: true, logprobs: true, structuredOutput: true, embeddingTokens: true });
    expect(openaiAdapter.images).toBeDefined();
  });
});
