import { createResponsesStreamFormatter } from '../../../shared/formats/responses-stream.formatter';
import { inputItemPage } from '../../../shared/formats/response-input-items.mapper';
import { withoutText } from '../../../shared/formats/unstored-text';
import { asInput, withPublicIds } from '../../../api/services/stored-responses';
import type { InputItem, TextResult } from '../../../shared/providers/provider.types';

const msg = (text: string): InputItem => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const items = ['a', 'b', 'c', 'd'].map((t, i) => ({ id: `msg_x_in${i}`, item: msg(t) }));
const texts = (page: ReturnType<typeof inputItemPage>) => page.data.map((d) => (d.content as Array<{ text: string }>)[0].text);

describe('inputItemPage', () => {
  it('lists newest first by default, pages with after and limit, and names the ends', () => {
    const first = inputItemPage(items, { order: 'desc', limit: 3 });
    expect(texts(first)).toEqual(['d', 'c', 'b']);
    expect(first).toMatchObject({ object: 'list', first_id: 'msg_x_in3', last_id: 'msg_x_in1', has_more: true });
    const second = inputItemPage(items, { order: 'desc', limit: 3, after: first.last_id! });
    expect(texts(second)).toEqual(['a']);
    expect(second.has_more).toBe(false);
    expect(texts(inputItemPage(items, { order: 'asc', limit: 2, after: 'msg_x_in0' }))).toEqual(['b', 'c']);
  });

  it('gives an empty page after an unknown id, and for no items', () => {
    expect(inputItemPage(items, { order: 'asc', limit: 20, after: 'msg_nope_in0' })).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
    expect(inputItemPage([], { order: 'desc', limit: 20 }).data).toEqual([]);
  });

  it('shows each item kind in OpenAI\'s shape', () => {
    const page = inputItemPage(
      [
        { id: 'fc_x_in0', item: { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' } },
        { id: 'fco_x_in1', item: { type: 'function_call_output', call_id: 'c1', output: 'ok' } },
        { id: 'msg_x_in2', item: { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'https://e.test/a.png' }] } },
        { id: 'rs_x_in3', item: { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' } },
      ],
      { order: 'asc', limit: 20 },
    );
    expect(page.data).toEqual([
      { id: 'fc_x_in0', type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}', status: 'completed' },
      { id: 'fco_x_in1', type: 'function_call_output', call_id: 'c1', output: 'ok', status: 'completed' },
      { id: 'msg_x_in2', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_image', image_url: 'https://e.test/a.png', detail: 'auto', file_id: null }] },
      { id: 'rs_x_in3', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' },
    ]);
  });
});

describe('withoutText', () => {
  it('keeps usage, finish reason and the output shape, and drops every text, encrypted reasoning too', () => {
    const result: TextResult = {
      output: [
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thinking' }], encrypted_content: 'ZW5jcnlwdGVk' },
        { type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'secret' }] },
        { type: 'function_call', id: 'fc_1', call_id: 'c', name: 'f', arguments: '{"pin":1234}' },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 10, outputTokens: 5 },
      logprobs: [{ token: 'secret', logprob: -0.1, top: [] }],
    };
    const kept = withoutText(result);
    expect(JSON.stringify(kept)).not.toMatch(/secret|thinking|1234|ZW5jcnlwdGVk|encrypted_content/);
    expect(kept).toMatchObject({ finishReason: 'tool_calls', usage: { inputTokens: 10, outputTokens: 5 } });
    expect(kept.output.map((o) => o.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect(kept.logprobs).toBeUndefined();
  });
});

describe('asInput: a stored answer as the next turn\'s input', () => {
  it('carries reasoning on only with its encrypted reasoning', () => {
    expect(
      asInput([
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' },
        { type: 'reasoning', id: 'rs_2', summary: [{ type: 'summary_text', text: 'A summary alone.' }] },
        { type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'Hi' }] },
      ]),
    ).toEqual([
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'ZW5j' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hi' }] },
    ]);
  });
});

describe('output item ids', () => {
  it('are the same streamed and stored, even when a call streams before the text', () => {
    const f = createResponsesStreamFormatter({ id: 'resp_abc', createdAt: 1, model: 'm', request: { model: 'm' } });
    f.push({ type: 'tool_call_start', index: 0, callId: 'call_1', name: 'f' });
    f.push({ type: 'tool_call_delta', index: 0, argumentsDelta: '{}' });
    f.push({ type: 'text_delta', text: 'hi' });
    // The stored result lists the text first (as the stream accumulator does).
    const result: TextResult = {
      output: [
        { type: 'message', id: 'msg_0', role: 'assistant', content: [{ type: 'output_text', text: 'hi' }] },
        { type: 'function_call', id: 'fc_0', call_id: 'call_1', name: 'f', arguments: '{}' },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 1, outputTokens: 1 },
    };
    const done = f.complete({ result, usage: {}, model: 'm' }).at(-1)!.data.response as { output: Array<{ id: string; type: string }> };
    const streamed = Object.fromEntries(done.output.map((o) => [o.type, o.id]));
    const stored = Object.fromEntries(withPublicIds('resp_abc', result).output.map((o) => [o.type, o.id]));
    expect(streamed).toEqual(stored);
    expect(stored).toEqual({ message: 'msg_abc_0', function_call: 'fc_abc_0' });
  });
});
