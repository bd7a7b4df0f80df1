import { createOpenAIStreamParser } from '../../../../shared/providers/openai/stream.mapper';
import { runStream, sse } from '../stream-helper';

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'chatcmpl-123',
  object: 'chat.completion.chunk',
  created: 1694268190,
  model: 'gpt-4.1-mini-2025-04-14',
  system_fingerprint: 'fp_44709d6fcb',
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  usage: null,
});
const usageChunk = {
  id: 'chatcmpl-123',
  object: 'chat.completion.chunk',
  model: 'gpt-4.1-mini-2025-04-14',
  choices: [],
  usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } },
};

describe('OpenAI stream parser', () => {
  it('says which tier served the call, as its chunks do', () => {
    const tiered = (c: object) => ({ ...c, service_tier: 'priority' });
    const events = runStream(createOpenAIStreamParser(), sse([tiered(chunk({ content: 'Hi' })), tiered(chunk({}, 'stop')), tiered(usageChunk), '[DONE]']));
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', modelVersion: 'gpt-4.1-mini-2025-04-14', serviceTier: 'priority' });
  });

  it('turns a text stream into deltas, usage and finish', () => {
    const transcript = sse([chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hel' }), chunk({ content: 'lo ✓' }), chunk({}, 'stop'), usageChunk, '[DONE]']);
    expect(runStream(createOpenAIStreamParser(), transcript, 5)).toEqual([
      { type: 'text_delta', text: 'Hel' },
      { type: 'text_delta', text: 'lo ✓' },
      { type: 'usage', usage: { inputTokens: 20, outputTokens: 9 } },
      { type: 'finish', finishReason: 'stop', modelVersion: 'gpt-4.1-mini-2025-04-14' },
    ]);
  });

  it('streams parallel tool calls by index', () => {
    const transcript = sse([
      chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
      chunk({}, 'tool_calls'),
      usageChunk,
      '[DONE]',
    ]);
    const events = runStream(createOpenAIStreamParser(), transcript);
    expect(events).toEqual([
      { type: 'tool_call_start', index: 0, callId: 'call_a', name: 'get_weather' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: '{"city":' },
      { type: 'tool_call_start', index: 1, callId: 'call_b', name: 'get_time' },
      { type: 'tool_call_delta', index: 1, argumentsDelta: '{}' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: '"Paris"}' },
      { type: 'usage', usage: { inputTokens: 20, outputTokens: 9 } },
      { type: 'finish', finishReason: 'tool_calls', modelVersion: 'gpt-4.1-mini-2025-04-14' },
    ]);
  });

  it('finishes at [DONE] when the server sends no usage', () => {
    const events = runStream(createOpenAIStreamParser(), sse([chunk({ content: 'x' }), chunk({}, 'length'), '[DONE]']));
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'length', modelVersion: 'gpt-4.1-mini-2025-04-14' });
    expect(events.filter((e) => e.type === 'finish')).toHaveLength(1);
  });

  it('reports a malformed data line and an in-stream error object', () => {
    const events = runStream(createOpenAIStreamParser(), 'data: {"choices": [\n\n' + sse([{ error: { message: 'overloaded', type: 'server_error' } }]));
    expect(events[0]).toMatchObject({ type: 'error', raw: '{"choices": [' });
    expect(events[1]).toMatchObject({ type: 'error', message: 'overloaded' });
  });

  it('reports a stream cut before finish_reason', () => {
    const events = runStream(createOpenAIStreamParser(), sse([chunk({ content: 'partial' })]));
    expect(events).toEqual([{ type: 'text_delta', text: 'partial' }, { type: 'error', message: 'OpenAI stream ended without a finish_reason' }]);
  });
});
