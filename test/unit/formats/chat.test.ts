import { buildChatCompletion } from '../../../shared/formats/chat.mapper';
import { CHAT_STREAM_DONE, createChatStreamFormatter, encodeChatSse, type ChatCompletionChunk } from '../../../shared/formats/chat-stream.formatter';
import { chatUsage } from '../../../shared/formats/format-utils';
import type { TextResult, TextStreamEvent } from '../../../shared/providers/provider.types';
import { sdkAnswering } from './helpers';

const result: TextResult = {
  output: [
    { type: 'reasoning', id: 'rs', summary: [{ type: 'summary_text', text: 'Think.' }] },
    { type: 'message', id: 'm', role: 'assistant', content: [{ type: 'output_text', text: 'Checking ' }, { type: 'output_text', text: 'now.' }] },
    { type: 'function_call', id: 'fc', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
  ],
  finishReason: 'tool_calls',
  usage: { inputTokens: 15, outputTokens: 9, cachedTokens: 4 },
  logprobs: [{ token: 'Checking', logprob: -0.2, top: [] }],
};
const usage = chatUsage(result.usage, { totalRub: '0.0005555555' });

describe('buildChatCompletion', () => {
  it('is an OpenAI chat.completion with tool calls, logprobs, usage and cost', () => {
    expect(buildChatCompletion({ id: 'chatcmpl-1', created: 1_700_000_000, model: 'openai/gpt-4.1-mini', result, usage })).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'openai/gpt-4.1-mini',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking now.',
            refusal: null,
            reasoning: 'Think.',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
          },
          logprobs: { content: [{ token: 'Checking', logprob: -0.2, bytes: [...Buffer.from('Checking')], top_logprobs: [] }], refusal: null },
          finish_reason: 'tool_calls',
        },
      ],
      usage: {
        prompt_tokens: 15,
        completion_tokens: 9,
        total_tokens: 24,
        prompt_tokens_details: { cached_tokens: 4, cache_write_tokens: 0, audio_tokens: 0, video_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, image_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
        cost_rub: 0.000556,
        cost: 0.000556,
      },
      service_tier: null,
      switchyard: {},
    });
    // The tier the provider says served it, as OpenAI's own chat.completion says it.
    expect(buildChatCompletion({ id: 'c', created: 1, model: 'm', result: { ...result, serviceTier: 'priority' }, usage }).service_tier).toBe('priority');
  });

  it('has null content for calls only and null logprobs when none were asked', () => {
    const calls: TextResult = { output: [result.output[2]!], finishReason: 'tool_calls', usage: result.usage };
    const c = buildChatCompletion({ id: 'c', created: 1, model: 'm', result: calls, usage, warnings: ['w'] });
    expect(c.choices[0]!.message.content).toBeNull();
    expect(c.choices[0]!.logprobs).toBeNull();
    expect(c.switchyard).toEqual({ warnings: ['w'] });
    const asked = buildChatCompletion({ id: 'c', created: 1, model: 'm', result: calls, usage, logprobs: true });
    expect(asked.choices[0]!.logprobs).toEqual({ content: [], refusal: null });
  });

  it('is read by the OpenAI SDK', async () => {
    const body = JSON.stringify(buildChatCompletion({ id: 'c', created: 1, model: 'm', result, usage }));
    const completion = await sdkAnswering(body, 'application/json').chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
    expect(completion.choices[0]!.message.content).toBe('Checking now.');
    expect(completion.choices[0]!.message.tool_calls?.[0]).toMatchObject({ id: 'call_1', function: { name: 'get_weather' } });
  });
});

describe('chat stream formatter', () => {
  const upstream: TextStreamEvent[] = [
    { type: 'reasoning_delta', text: 'Hm.' },
    { type: 'text_delta', text: 'Checking ' },
    { type: 'text_delta', text: 'now.' },
    { type: 'tool_call_start', index: 0, callId: 'call_1', name: 'get_weather' },
    { type: 'tool_call_delta', index: 0, argumentsDelta: '{"city":' },
    { type: 'tool_call_delta', index: 0, argumentsDelta: '"Paris"}' },
    { type: 'usage', usage: result.usage },
    { type: 'finish', finishReason: 'tool_calls' },
  ];

  function run(includeUsage: boolean): ChatCompletionChunk[] {
    const f = createChatStreamFormatter({ id: 'chatcmpl-9', created: 1_700_000_000, model: 'openai/gpt-4.1-mini', includeUsage });
    const chunks = [...f.start()];
    for (const e of upstream) chunks.push(...f.push(e));
    chunks.push(...f.complete({ usage }));
    return chunks;
  }

  it('sends the role first, then deltas, then the finish reason', () => {
    const chunks = run(false);
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([
      { role: 'assistant', content: '', refusal: null },
      { reasoning: 'Hm.' },
      { content: 'Checking ' },
      { content: 'now.' },
      { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] },
      {},
    ]);
    expect(chunks.map((c) => c.choices[0]?.finish_reason)).toEqual([null, null, null, null, null, null, null, 'tool_calls']);
    for (const c of chunks) {
      expect(c).toMatchObject({ id: 'chatcmpl-9', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'openai/gpt-4.1-mini' });
      expect(c).not.toHaveProperty('usage');
    }
  });

  it('with include_usage: usage null on every chunk, then a last chunk with no choices and the usage', () => {
    const chunks = run(true);
    expect(chunks).toHaveLength(9);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-1)).toEqual({
      id: 'chatcmpl-9',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: 'openai/gpt-4.1-mini',
      choices: [],
      usage,
      switchyard: {},
    });
  });

  it('is accumulated by the OpenAI SDK into the same completion', async () => {
    const wire = run(true).map(encodeChatSse).join('') + encodeChatSse(CHAT_STREAM_DONE);
    const stream = sdkAnswering(wire, 'text/event-stream').chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'Hi' }],
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe('Checking now.');
    expect(final.choices[0]!.message.tool_calls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect((final.usage as unknown as { cost_rub: number }).cost_rub).toBe(0.000556);
  });

  it('says the tier that served the call on its closing chunks, which the SDK keeps on the completion', async () => {
    const f = createChatStreamFormatter({ id: 'c', created: 1, model: 'm', includeUsage: true });
    const chunks = [...f.push({ type: 'text_delta', text: 'Hi' }), ...f.complete({ usage, serviceTier: 'priority' })];
    expect(chunks.map((c) => c.service_tier)).toEqual([undefined, undefined, 'priority', 'priority']);
    const wire = chunks.map(encodeChatSse).join('') + encodeChatSse(CHAT_STREAM_DONE);
    const final = await sdkAnswering(wire, 'text/event-stream').chat.completions.stream({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }).finalChatCompletion();
    expect(final.service_tier).toBe('priority');
  });

  it('fails with one error chunk, which the SDK throws', async () => {
    const f = createChatStreamFormatter({ id: 'c', created: 1, model: 'm' });
    const chunks = [...f.push({ type: 'text_delta', text: 'par' })];
    const error = f.fail({ code: 'BAD_GATEWAY', message: 'Provider stream broke', metadata: { reason: 'provider_error' } });
    expect(error).toEqual([{ error: { code: 'BAD_GATEWAY', message: 'Provider stream broke', type: 'server_error', metadata: { reason: 'provider_error' } } }]);
    expect(f.complete({ usage })).toEqual([]);
    const wire = [...chunks, ...error].map(encodeChatSse).join('');
    const stream = await sdkAnswering(wire, 'text/event-stream').chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    await expect(
      (async () => {
        for await (const _chunk of stream) void _chunk;
      })(),
    ).rejects.toThrow('Provider stream broke');
  });

  it('encodes chunks and the [DONE] marker as data lines', () => {
    expect(encodeChatSse(CHAT_STREAM_DONE)).toBe('data: [DONE]\n\n');
    expect(encodeChatSse({ error: { code: 'X', message: 'y', type: 'server_error' } })).toBe('data: {"error":{"code":"X","message":"y","type":"server_error"}}\n\n');
  });
});
