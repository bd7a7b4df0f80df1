import { createAnthropicStreamParser } from '../../../../shared/providers/anthropic/stream.mapper';
import { runStream, sse } from '../stream-helper';

// Shaped after https://docs.anthropic.com/en/docs/build-with-claude/streaming#full-http-stream-response
const transcript = sse([
  ['message_start', { type: 'message_start', message: { id: 'msg_014p7gG3wDgGV9EUtLvnow3U', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], stop_reason: null, usage: { input_tokens: 472, cache_read_input_tokens: 1000, cache_creation_input_tokens: 0, output_tokens: 2 } } }],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Need the weather.' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQB' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }],
  ['ping', { type: 'ping' }],
  ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Okay, let’s check' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 1 }],
  ['content_block_start', { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: {} } }],
  ['content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"location": "San Fra' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: 'ncisco, CA"}' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 2 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 89 } }],
  ['message_stop', { type: 'message_stop' }],
]);

describe('Anthropic stream parser', () => {
  it('turns the documented event sequence into canonical events', () => {
    expect(runStream(createAnthropicStreamParser(), transcript, 11)).toEqual([
      { type: 'reasoning_delta', text: 'Need the weather.' },
      { type: 'text_delta', text: 'Okay, let’s check' },
      { type: 'tool_call_start', index: 0, callId: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: '{"location": "San Fra' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: 'ncisco, CA"}' },
      { type: 'usage', usage: { inputTokens: 1472, outputTokens: 89, cachedTokens: 1000 } },
      { type: 'finish', finishReason: 'tool_calls', modelVersion: 'claude-sonnet-4-5-20250929' },
    ]);
  });

  it('reports an error event and a stream cut before message_delta', () => {
    const cut = sse([
      ['message_start', { type: 'message_start', message: { model: 'claude', usage: { input_tokens: 1, output_tokens: 1 } } }],
      ['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
    ]);
    const events = runStream(createAnthropicStreamParser(), cut);
    expect(events).toEqual([
      { type: 'error', message: 'Overloaded', raw: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' },
      { type: 'error', message: 'Anthropic stream ended without a stop_reason' },
    ]);
  });

  it('reports a malformed data line', () => {
    expect(runStream(createAnthropicStreamParser(), 'event: message_start\ndata: {nope\n\n')[0]).toMatchObject({ type: 'error', raw: '{nope' });
  });
});
