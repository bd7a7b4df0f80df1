import { createResponsesStreamFormatter, encodeSse, type SseEvent } from '../../../shared/formats/responses-stream.formatter';
import { publicUsage } from '../../../shared/formats/format-utils';
import type { TextResult, TextStreamEvent } from '../../../shared/providers/provider.types';
import type { ResponsesBody } from '../../../shared/schemas/responses.schema';
import { sdkAnswering } from './helpers';

const request: ResponsesBody = { model: 'openai/gpt-4.1-mini', input: 'Weather in Paris?', stream: true, metadata: { t: '1' } };
const base = { id: 'resp_abc', createdAt: 1_700_000_000, model: 'openai/gpt-4.1-mini', request };

const upstream: TextStreamEvent[] = [
  { type: 'reasoning_delta', text: 'Need the ' },
  { type: 'reasoning_delta', text: 'weather.' },
  { type: 'text_delta', text: 'Let me ' },
  { type: 'text_delta', text: 'check.' },
  { type: 'tool_call_start', index: 0, callId: 'call_1', name: 'get_weather' },
  { type: 'tool_call_delta', index: 0, argumentsDelta: '{"city":' },
  { type: 'tool_call_delta', index: 0, argumentsDelta: '"Paris"}' },
  { type: 'usage', usage: { inputTokens: 30, outputTokens: 12 } },
  { type: 'finish', finishReason: 'tool_calls' },
];

const result: TextResult = {
  output: [
    { type: 'reasoning', id: 'up_rs', summary: [{ type: 'summary_text', text: 'Need the weather.' }] },
    { type: 'message', id: 'up_msg', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
    { type: 'function_call', id: 'up_fc', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
  ],
  finishReason: 'tool_calls',
  usage: { inputTokens: 30, outputTokens: 12 },
};
const usage = publicUsage(result.usage, { totalRub: '0.0031234567', inferenceRub: '0.0031234567' });

function run(): SseEvent[] {
  const f = createResponsesStreamFormatter(base);
  const events = [...f.start()];
  for (const e of upstream) events.push(...f.push(e));
  events.push(...f.complete({ result, usage, model: 'openai/gpt-4.1-mini', completedAt: 1_700_000_002 }));
  return events;
}

describe('Responses stream formatter', () => {
  const events = run();

  it('emits the OpenAI event sequence', () => {
    expect(events.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added', // reasoning
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added', // message
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added', // function call
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it('numbers events 0, 1, 2, ... and names each data by its event', () => {
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    for (const e of events) expect(e.data.type).toBe(e.event);
  });

  it('starts in progress and keeps item ids and indexes consistent', () => {
    const created = events[0]!.data.response as { status: string; output: unknown[]; switchyard: object; usage: unknown };
    expect(created).toMatchObject({ status: 'in_progress', output: [], switchyard: {}, usage: null });
    const added = events.filter((e) => e.event === 'response.output_item.added').map((e) => e.data as unknown as { output_index: number; item: { id: string; type: string; status: string } });
    expect(added.map((a) => [a.output_index, a.item.type, a.item.id, a.item.status])).toEqual([
      [0, 'reasoning', 'rs_abc_0', 'in_progress'],
      [1, 'message', 'msg_abc_0', 'in_progress'],
      [2, 'function_call', 'fc_abc_0', 'in_progress'],
    ]);
    for (const e of events.filter((x) => 'item_id' in x.data)) {
      const d = e.data as unknown as { item_id: string; output_index: number };
      expect(added[d.output_index]!.item.id).toBe(d.item_id);
    }
    const deltas = events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data);
    expect(deltas[0]).toEqual({
      type: 'response.output_text.delta',
      item_id: 'msg_abc_0',
      output_index: 1,
      content_index: 0,
      delta: 'Let me ',
      logprobs: [],
      sequence_number: 11,
    });
  });

  it('ends with response.completed carrying the full response and the cost', () => {
    const done = events.at(-1)!.data.response as Record<string, unknown>;
    expect(done).toMatchObject({
      id: 'resp_abc',
      status: 'completed',
      completed_at: 1_700_000_002,
      output_text: 'Let me check.',
      metadata: { t: '1' },
      usage: { input_tokens: 30, output_tokens: 12, total_tokens: 42, cost_rub: 0.003123, cost: 0.003123 },
      switchyard: {},
    });
    expect(done.output).toEqual([
      { type: 'reasoning', id: 'rs_abc_0', summary: [{ type: 'summary_text', text: 'Need the weather.' }], status: 'completed' },
      { type: 'message', id: 'msg_abc_0', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.', annotations: [], logprobs: [] }] },
      { type: 'function_call', id: 'fc_abc_0', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
    ]);
  });

  it('adds result items the stream never showed, and uses injected ids', () => {
    let n = 0;
    const f = createResponsesStreamFormatter({ ...base, newId: (prefix) => `${prefix}_x${n++}` });
    const events = [...f.start(), ...f.complete({ result: { output: [{ type: 'message', id: 'u', role: 'assistant', content: [{ type: 'output_text', text: 'Whole answer' }] }], finishReason: 'stop', usage: result.usage }, usage, model: 'fallback/model' })];
    expect(events.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[4]!.data).toMatchObject({ item_id: 'msg_x0', text: 'Whole answer' });
    expect(events.at(-1)!.data.response).toMatchObject({ model: 'fallback/model', output_text: 'Whole answer' });
  });

  it('ends a failed stream with response.failed, keeping the partial output', () => {
    const f = createResponsesStreamFormatter(base);
    const events = [...f.start(), ...f.push({ type: 'text_delta', text: 'Partial' })];
    events.push(...f.fail({ code: 'BAD_GATEWAY', message: 'Provider stream broke', metadata: { reason: 'provider_error' } }));
    const last = events.at(-1)!;
    expect(last.event).toBe('response.failed');
    expect(last.data.response).toMatchObject({
      status: 'failed',
      error: { code: 'BAD_GATEWAY', message: 'Provider stream broke', metadata: { reason: 'provider_error' } },
      output: [{ type: 'message', status: 'incomplete', content: [{ text: 'Partial' }] }],
      switchyard: {},
    });
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(f.push({ type: 'text_delta', text: 'late' })).toEqual([]);
    expect(f.complete({ result, usage, model: 'm' })).toEqual([]);
  });

  it('ends a cut answer with response.incomplete when asked', () => {
    const f = createResponsesStreamFormatter(base);
    f.push({ type: 'text_delta', text: 'Cut sh' });
    const events = f.complete({
      result: { output: [{ type: 'message', id: 'u', role: 'assistant', content: [{ type: 'output_text', text: 'Cut sh' }] }], finishReason: 'length', usage: result.usage },
      usage,
      model: 'm',
      status: 'incomplete',
    });
    expect(events.at(-1)!.event).toBe('response.incomplete');
    expect(events.at(-1)!.data.response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  });

  it('encodes one event as an SSE frame', () => {
    expect(encodeSse({ event: 'response.created', data: { type: 'response.created', sequence_number: 0 } })).toBe(
      'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n',
    );
  });

  it('is read by the OpenAI SDK: events, final response, output_text and cost', async () => {
    const client = sdkAnswering(events.map(encodeSse).join(''), 'text/event-stream');
    const stream = client.responses.stream({ model: 'openai/gpt-4.1-mini', input: 'Weather in Paris?' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(deltas).toEqual(['Let me ', 'check.']);
    expect(final.output_text).toBe('Let me check.');
    expect(final.output.map((o) => o.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect((final.usage as unknown as { cost_rub: number }).cost_rub).toBe(0.003123);
    expect((final as unknown as { switchyard: object }).switchyard).toEqual({});
  });

  it('closes a reasoning item with its encrypted reasoning as OpenAI does, one without a summary too', async () => {
    const f = createResponsesStreamFormatter(base);
    const events = [
      ...f.start(),
      ...f.push({ type: 'reasoning_delta', text: 'Think.' }),
      ...f.push({ type: 'reasoning_end', encryptedContent: 'ZW5jMQ==' }),
      ...f.push({ type: 'reasoning_end', encryptedContent: 'ZW5jMg==' }),
      ...f.push({ type: 'text_delta', text: 'Hi' }),
    ];
    const stored: TextResult = {
      output: [
        { type: 'reasoning', id: 'rs_0', summary: [{ type: 'summary_text', text: 'Think.' }], encrypted_content: 'ZW5jMQ==' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'ZW5jMg==' },
        { type: 'message', id: 'msg_0', role: 'assistant', content: [{ type: 'output_text', text: 'Hi' }] },
      ],
      finishReason: 'stop',
      usage: result.usage,
      serviceTier: 'flex',
    };
    events.push(...f.complete({ result: stored, usage, model: 'm' }));
    expect(events.map((e) => e.event).slice(2, 10)).toEqual([
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added', // the reasoning without a summary: no summary part
      'response.output_item.done',
    ]);
    const done = events.filter((e) => e.event === 'response.output_item.done').map((e) => e.data.item);
    expect(done.slice(0, 2)).toEqual([
      { type: 'reasoning', id: 'rs_abc_0', summary: [{ type: 'summary_text', text: 'Think.' }], status: 'completed', encrypted_content: 'ZW5jMQ==' },
      { type: 'reasoning', id: 'rs_abc_1', summary: [], status: 'completed', encrypted_content: 'ZW5jMg==' },
    ]);
    const final = await sdkAnswering(events.map(encodeSse).join(''), 'text/event-stream').responses.stream({ model: 'm', input: 'x' }).finalResponse();
    expect(final.output.filter((o) => o.type === 'reasoning')).toEqual(done.slice(0, 2));
    expect(final.service_tier).toBe('flex');
  });

  it('a failed stream reaches the SDK as response.failed', async () => {
    const f = createResponsesStreamFormatter(base);
    const wire = [...f.start(), ...f.push({ type: 'text_delta', text: 'x' }), ...f.fail({ code: 'BAD_GATEWAY', message: 'boom' })].map(encodeSse).join('');
    const stream = await sdkAnswering(wire, 'text/event-stream').responses.create({ model: 'm', input: 'x', stream: true });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types.at(-1)).toBe('response.failed');
  });
});
