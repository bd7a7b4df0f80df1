import { extractAnthropicError, parseMessage } from '../../../../shared/providers/anthropic/response.mapper';
import { UpstreamError } from '../../../../shared/providers/upstream-error';

// Shaped after https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use
const messageWithToolUse = {
  id: 'msg_01Aq9w938a90dw8q',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [
    { type: 'thinking', thinking: 'The user wants the weather; call the tool.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' },
    { type: 'text', text: 'I’ll check the weather in San Francisco.' },
    { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', input: { location: 'San Francisco, CA', unit: 'celsius' } },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: { input_tokens: 472, cache_creation_input_tokens: 100, cache_read_input_tokens: 2048, output_tokens: 91, service_tier: 'standard' },
};

describe('Anthropic message → TextResult', () => {
  it('maps thinking, text, tool_use, stop_reason and cache usage', () => {
    expect(parseMessage(messageWithToolUse)).toEqual({
      output: [
        { type: 'reasoning', id: 'rs_msg_01Aq9w938a90dw8q', summary: [{ type: 'summary_text', text: 'The user wants the weather; call the tool.' }] },
        { type: 'message', id: 'msg_msg_01Aq9w938a90dw8q', role: 'assistant', content: [{ type: 'output_text', text: 'I’ll check the weather in San Francisco.' }] },
        {
          type: 'function_call',
          id: 'fc_toolu_01A09q90qw90lq917835lq9',
          call_id: 'toolu_01A09q90qw90lq917835lq9',
          name: 'get_weather',
          arguments: '{"location":"San Francisco, CA","unit":"celsius"}',
        },
      ],
      finishReason: 'tool_calls',
      // input counts every input token: 472 plain + 2048 read + 100 written
      usage: { inputTokens: 2620, outputTokens: 91, cachedTokens: 2048, cacheWriteTokens: 100 },
      modelVersion: 'claude-sonnet-4-5-20250929',
      upstreamId: 'msg_01Aq9w938a90dw8q',
    });
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['refusal', 'content_filter'],
    ['something_new', 'stop'],
  ])('maps stop_reason %s to %s', (stop, finish) => {
    expect(parseMessage({ ...messageWithToolUse, stop_reason: stop }).finishReason).toBe(finish);
  });

  it('calls a reply without content malformed', () => {
    expect(() => parseMessage({ type: 'message' })).toThrow(UpstreamError);
  });

  it('reads the error body and its type', () => {
    expect(extractAnthropicError({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })).toEqual({ message: 'Overloaded', reason: 'provider_error' });
    expect(extractAnthropicError({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } })).toEqual({
      message: 'max_tokens: Field required',
      reason: 'bad_request',
    });
  });
});
