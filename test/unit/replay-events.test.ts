import { replayEvents } from '../../api/services/text-replies';

describe('replayEvents: a stored result as the stream events of an Idempotency-Key replay', () => {
  it('turns reasoning (with its encrypted reasoning), text and tool calls into deltas, in output order, numbering tool calls from 0', () => {
    expect(
      replayEvents({
        output: [
          { type: 'reasoning', id: 'r1', summary: [{ type: 'summary_text', text: 'Thinking' }], encrypted_content: 'ZW5j' },
          { type: 'message', id: 'm1', role: 'assistant', content: [{ type: 'output_text', text: 'Hello' }, { type: 'output_text', text: ' there' }] },
          { type: 'function_call', id: 'f1', call_id: 'call_1', name: 'lookup', arguments: '{"q":1}' },
          { type: 'function_call', id: 'f2', call_id: 'call_2', name: 'save', arguments: '{}' },
        ],
        finishReason: 'tool_calls',
        usage: { inputTokens: 1, outputTokens: 2 },
      }),
    ).toEqual([
      { type: 'reasoning_delta', text: 'Thinking' },
      { type: 'reasoning_end', encryptedContent: 'ZW5j' },
      { type: 'text_delta', text: 'Hello' },
      { type: 'text_delta', text: ' there' },
      { type: 'tool_call_start', index: 0, callId: 'call_1', name: 'lookup' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: '{"q":1}' },
      { type: 'tool_call_start', index: 1, callId: 'call_2', name: 'save' },
      { type: 'tool_call_delta', index: 1, argumentsDelta: '{}' },
    ]);
  });
});
