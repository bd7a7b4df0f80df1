import { StreamAccumulator } from '../../workers/services/stream-accumulator';
import type { TextStreamEvent } from '../../shared/providers/provider.types';

const accumulate = (events: TextStreamEvent[]) => {
  const acc = new StreamAccumulator('openai');
  for (const e of events) acc.push(e);
  return acc;
};

describe('StreamAccumulator: what a stream produced, as the stored result', () => {
  it('keeps each reasoning item with its encrypted reasoning, one without a summary too', () => {
    const acc = accumulate([
      { type: 'reasoning_delta', text: 'Need ' },
      { type: 'reasoning_delta', text: 'a tool.' },
      { type: 'reasoning_end', encryptedContent: 'ZW5jMQ==' },
      { type: 'reasoning_end', encryptedContent: 'ZW5jMg==' },
      { type: 'text_delta', text: 'Hi' },
      { type: 'usage', usage: { inputTokens: 5, outputTokens: 9, reasoningTokens: 7 } },
      { type: 'finish', finishReason: 'stop', serviceTier: 'flex' },
    ]);
    expect(acc.result(acc.reported!)).toEqual({
      output: [
        { type: 'reasoning', id: 'rs_0', summary: [{ type: 'summary_text', text: 'Need a tool.' }], encrypted_content: 'ZW5jMQ==' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'ZW5jMg==' },
        { type: 'message', id: 'msg_0', role: 'assistant', content: [{ type: 'output_text', text: 'Hi' }] },
      ],
      finishReason: 'stop',
      usage: { inputTokens: 5, outputTokens: 9, reasoningTokens: 7 },
      modelVersion: undefined,
      serviceTier: 'flex',
    });
  });

  it('counts encrypted reasoning as content sent (a cut stream is billed), an empty end not', () => {
    expect(accumulate([{ type: 'reasoning_end' }]).produced).toBe(false);
    expect(accumulate([{ type: 'reasoning_end', encryptedContent: 'ZW5j' }]).produced).toBe(true);
    expect(accumulate([{ type: 'reasoning_delta', text: 'a' }, { type: 'reasoning_end' }, { type: 'reasoning_delta', text: 'b' }]).result({ inputTokens: 1, outputTokens: 1 }).output).toEqual([
      { type: 'reasoning', id: 'rs_0', summary: [{ type: 'summary_text', text: 'a' }] },
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'b' }] },
      { type: 'message', id: 'msg_0', role: 'assistant', content: [{ type: 'output_text', text: '' }] },
    ]);
  });
});
