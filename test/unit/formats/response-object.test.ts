import { addOutputText } from 'openai/lib/ResponsesParser';
import { buildResponseObject, incompleteReason } from '../../../shared/formats/response-object.mapper';
import { publicUsage } from '../../../shared/formats/format-utils';
import type { TextResult } from '../../../shared/providers/provider.types';
import type { ResponsesBody } from '../../../shared/schemas/responses.schema';

const request: ResponsesBody = {
  model: 'openai/gpt-4.1-mini',
  input: 'Weather in Paris?',
  instructions: 'Be brief.',
  metadata: { ticket: 'T-1' },
  tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object' } }],
  tool_choice: 'auto',
  temperature: 0.2,
  top_p: 0.9,
  max_output_tokens: 500,
  previous_response_id: 'resp_prev',
  reasoning: { effort: 'low' },
  text: { format: { type: 'text' } },
  store: false,
  user: 'u-1',
};

const result: TextResult = {
  output: [
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Look it up.' }] },
    { type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'It is ' }, { type: 'output_text', text: 'sunny.' }] },
    { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
  ],
  finishReason: 'stop',
  usage: { inputTokens: 20, outputTokens: 10 },
  serviceTier: 'flex',
  logprobs: [{ token: 'It', logprob: -0.1, top: [{ token: 'It', logprob: -0.1 }, { token: 'The', logprob: -2.5 }] }],
};

const usage = publicUsage(result.usage, { totalRub: '0.0123456789', inferenceRub: '0.0123456789' });

describe('buildResponseObject', () => {
  const obj = buildResponseObject({
    id: 'resp_1',
    createdAt: 1_700_000_000,
    completedAt: 1_700_000_003,
    model: 'openai/gpt-4.1-mini',
    status: 'completed',
    result,
    usage,
    request,
    warnings: ['temperature was dropped by provider acme'],
    switchyard: { provider: 'acme' },
  });

  it('is an OpenAI Response object echoing the request', () => {
    expect(obj).toMatchObject({
      id: 'resp_1',
      object: 'response',
      created_at: 1_700_000_000,
      completed_at: 1_700_000_003,
      status: 'completed',
      background: false,
      error: null,
      incomplete_details: null,
      instructions: 'Be brief.',
      max_output_tokens: 500,
      model: 'openai/gpt-4.1-mini',
      parallel_tool_calls: true,
      previous_response_id: 'resp_prev',
      reasoning: { effort: 'low', summary: null },
      service_tier: 'flex', // the tier the provider says served it
      store: false,
      temperature: 0.2,
      text: { format: { type: 'text' }, verbosity: 'medium' },
      tool_choice: 'auto',
      tools: request.tools,
      top_p: 0.9,
      truncation: 'disabled',
      user: 'u-1',
      metadata: { ticket: 'T-1' },
      output_text: 'It is sunny.',
      switchyard: { provider: 'acme', warnings: ['temperature was dropped by provider acme'] },
    });
    expect(obj.usage).toMatchObject({ input_tokens: 20, output_tokens: 10, cost_rub: 0.012346, cost: 0.012346 });
  });

  it('lists output items with status completed and logprobs on the first text part', () => {
    expect(obj.output).toEqual([
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Look it up.' }], status: 'completed' },
      {
        type: 'message',
        id: 'msg_1',
        status: 'completed',
        role: 'assistant',
        content: [
          {
            type: 'output_text',
            text: 'It is ',
            annotations: [],
            logprobs: [
              {
                token: 'It',
                logprob: -0.1,
                bytes: [73, 116],
                top_logprobs: [
                  { token: 'It', logprob: -0.1, bytes: [73, 116] },
                  { token: 'The', logprob: -2.5, bytes: [84, 104, 101] },
                ],
              },
            ],
          },
          { type: 'output_text', text: 'sunny.', annotations: [], logprobs: [] },
        ],
      },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
    ]);
  });

  it('gives the OpenAI SDK the same output_text it computes itself', () => {
    const copy = JSON.parse(JSON.stringify(obj));
    delete copy.output_text;
    addOutputText(copy);
    expect(copy.output_text).toBe('It is sunny.');
  });

  it('has an empty switchyard object and nulls while queued', () => {
    const queued = buildResponseObject({ id: 'resp_2', createdAt: 1, model: 'm', status: 'queued', request: { model: 'm', input: 'x', background: true } });
    expect(queued).toMatchObject({
      status: 'queued',
      background: true,
      output: [],
      output_text: '',
      usage: null,
      completed_at: null,
      error: null,
      instructions: null,
      metadata: {},
      tools: [],
      tool_choice: 'auto',
      service_tier: null,
      store: true,
      user: null,
      switchyard: {},
    });
  });

  it('reports a cut answer in incomplete_details and the failure in error', () => {
    const cut: TextResult = { ...result, finishReason: 'length' };
    expect(incompleteReason(cut)).toBe('max_output_tokens');
    const incomplete = buildResponseObject({ id: 'r', createdAt: 1, model: 'm', status: 'incomplete', result: cut, usage, request });
    expect(incomplete.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(incomplete.output.find((i) => i.type === 'message')?.status).toBe('incomplete');

    const failed = buildResponseObject({
      id: 'r',
      createdAt: 1,
      model: 'm',
      status: 'failed',
      request,
      error: { code: 'BAD_GATEWAY', message: 'All providers failed', metadata: { reason: 'all_providers_failed' } },
    });
    expect(failed).toMatchObject({ status: 'failed', output: [], error: { code: 'BAD_GATEWAY', metadata: { reason: 'all_providers_failed' } } });
  });
});
