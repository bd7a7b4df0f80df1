import { extractOpenAIError, parseChatCompletion, parseEmbeddings, parseImages } from '../../../../shared/providers/openai/response.mapper';
import { UpstreamError } from '../../../../shared/providers/upstream-error';

// Shaped after https://platform.openai.com/docs/api-reference/chat/object
const completionWithToolCalls = {
  id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
  object: 'chat.completion',
  created: 1741569952,
  model: 'gpt-4.1-mini-2025-04-14',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Checking.',
        refusal: null,
        tool_calls: [
          { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_def', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      logprobs: {
        content: [
          { token: 'Check', logprob: -0.01, bytes: [67], top_logprobs: [{ token: 'Check', logprob: -0.01, bytes: [67] }, { token: 'Let', logprob: -4.7, bytes: [76] }] },
          { token: 'ing', logprob: -0.0002, bytes: [105], top_logprobs: [{ token: 'ing', logprob: -0.0002, bytes: [105] }] },
        ],
        refusal: null,
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage: {
    prompt_tokens: 82,
    completion_tokens: 17,
    total_tokens: 99,
    prompt_tokens_details: { cached_tokens: 64, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 5, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  },
  service_tier: 'default',
  system_fingerprint: 'fp_44709d6fcb',
};

describe('OpenAI chat completion → TextResult', () => {
  it('maps text, tool calls, logprobs, usage and finish reason', () => {
    const result = parseChatCompletion(completionWithToolCalls);
    expect(result).toEqual({
      output: [
        { type: 'message', id: 'msg_chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', id: 'fc_call_abc', call_id: 'call_abc', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', id: 'fc_call_def', call_id: 'call_def', name: 'get_time', arguments: '{}' },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 82, outputTokens: 17, cachedTokens: 64, reasoningTokens: 5 },
      logprobs: [
        { token: 'Check', logprob: -0.01, top: [{ token: 'Check', logprob: -0.01 }, { token: 'Let', logprob: -4.7 }] },
        { token: 'ing', logprob: -0.0002, top: [{ token: 'ing', logprob: -0.0002 }] },
      ],
      modelVersion: 'gpt-4.1-mini-2025-04-14',
      upstreamId: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
      serviceTier: 'default',
    });
  });

  it('maps length and content_filter, and reasoning_content from compatible servers', () => {
    const reply = {
      id: 'x',
      model: 'deepseek-reasoner',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi', reasoning_content: 'Think…' }, finish_reason: 'length' }],
      usage: { prompt_tokens: 1, completion_tokens: 2 },
    };
    const result = parseChatCompletion(reply);
    expect(result.finishReason).toBe('length');
    expect(result.output[0]).toEqual({ type: 'reasoning', id: 'rs_x', summary: [{ type: 'summary_text', text: 'Think…' }] });
    expect(parseChatCompletion({ ...reply, choices: [{ ...reply.choices[0], finish_reason: 'content_filter' }] }).finishReason).toBe('content_filter');
  });

  it('calls a reply without choices malformed', () => {
    expect(() => parseChatCompletion({ object: 'chat.completion' })).toThrow(UpstreamError);
    try {
      parseChatCompletion({});
    } catch (e) {
      expect((e as UpstreamError).failure).toMatchObject({ reason: 'malformed_reply', fallback: true });
    }
  });

  it('reads the error body', () => {
    const body = { error: { message: 'Rate limit reached for gpt-4.1-mini', type: 'requests', param: null, code: 'rate_limit_exceeded' } };
    expect(extractOpenAIError(body)).toEqual({ message: 'Rate limit reached for gpt-4.1-mini', reason: 'rate_limited' });
    expect(extractOpenAIError({ error: 'plain text' })).toEqual({ message: 'plain text' });
  });
});

describe('OpenAI embeddings and images replies', () => {
  const req = { model: 'text-embedding-3-small', inputs: [{ type: 'text' as const, text: 'a' }, { type: 'text' as const, text: 'b' }] };

  it('orders vectors by index and reads usage', () => {
    const reply = {
      object: 'list',
      data: [
        { object: 'embedding', index: 1, embedding: [0.3, 0.4] },
        { object: 'embedding', index: 0, embedding: [0.1, 0.2] },
      ],
      model: 'text-embedding-3-small',
      usage: { prompt_tokens: 4, total_tokens: 4 },
    };
    expect(parseEmbeddings(reply, req)).toEqual({ vectors: [[0.1, 0.2], [0.3, 0.4]], usage: { inputTokens: 4 }, modelVersion: 'text-embedding-3-small' });
  });

  it('decodes base64 vectors from servers that ignore encoding_format', () => {
    const b64 = Buffer.from(new Float32Array([0.5, -2]).buffer).toString('base64');
    const reply = { data: [{ index: 0, embedding: b64 }, { index: 1, embedding: [1] }], usage: { prompt_tokens: 2 } };
    expect(parseEmbeddings(reply, req).vectors[0]).toEqual([0.5, -2]);
  });

  it('refuses a vector count that does not match the inputs', () => {
    expect(() => parseEmbeddings({ data: [{ index: 0, embedding: [1] }] }, req)).toThrow(UpstreamError);
  });

  it('maps generated images and gpt-image usage', () => {
    const reply = {
      created: 1713833628,
      background: 'transparent',
      output_format: 'png',
      quality: 'high',
      size: '1024x1024',
      data: [{ b64_json: 'iVBORw0KGgo=' }, { url: 'https://cdn/x.png', revised_prompt: 'a red fox' }],
      usage: { total_tokens: 100, input_tokens: 50, output_tokens: 50, input_tokens_details: { text_tokens: 10, image_tokens: 40 } },
    };
    expect(parseImages(reply)).toEqual({
      images: [{ b64: 'iVBORw0KGgo=' }, { url: 'https://cdn/x.png', revisedPrompt: 'a red fox' }],
      usage: { inputTokens: 50, outputTokens: 50, imageInputTokens: 40, textInputTokens: 10 },
      outputFormat: 'png',
      size: '1024x1024',
      quality: 'high',
      background: 'transparent',
    });
  });
});
