import { createGeminiStreamParser } from '../../../../shared/providers/gemini/stream.mapper';
import { runStream, sse } from '../stream-helper';

const part = (parts: unknown[], extra: Record<string, unknown> = {}) => ({
  candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }],
  usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
  modelVersion: 'gemini-2.5-flash',
  responseId: 'Ab12',
});

describe('Gemini stream parser', () => {
  it('turns streamed chunks into deltas, usage and finish', () => {
    const transcript = sse([
      part([{ text: 'Planning…', thought: true }]),
      part([{ text: 'Bonjour' }]),
      {
        candidates: [{ content: { role: 'model', parts: [{ text: ' le monde' }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 4, thoughtsTokenCount: 12, totalTokenCount: 25 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'Ab12',
      },
    ]).replace(/\n\n/g, '\r\n\r\n');
    expect(runStream(createGeminiStreamParser(), transcript, 9)).toEqual([
      { type: 'reasoning_delta', text: 'Planning…' },
      { type: 'text_delta', text: 'Bonjour' },
      { type: 'text_delta', text: ' le monde' },
      { type: 'usage', usage: { inputTokens: 9, outputTokens: 16, reasoningTokens: 12 } },
      { type: 'finish', finishReason: 'stop', modelVersion: 'gemini-2.5-flash' },
    ]);
  });

  it('emits a function call whole and finishes with tool_calls', () => {
    const transcript = sse([part([{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }], { finishReason: 'STOP' })]);
    expect(runStream(createGeminiStreamParser(), transcript)).toEqual([
      { type: 'tool_call_start', index: 0, callId: 'call_Ab12_0', name: 'get_weather' },
      { type: 'tool_call_delta', index: 0, argumentsDelta: '{"city":"Paris"}' },
      { type: 'usage', usage: { inputTokens: 9, outputTokens: 0 } },
      { type: 'finish', finishReason: 'tool_calls', modelVersion: 'gemini-2.5-flash' },
    ]);
  });

  it('reports a malformed line, an error chunk and a stream cut before finishReason', () => {
    const transcript = 'data: not json\n\n' + sse([{ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }]);
    expect(runStream(createGeminiStreamParser(), transcript)).toEqual([
      { type: 'error', message: 'malformed stream event: not a JSON object', raw: 'not json' },
      { type: 'error', message: 'The model is overloaded.', raw: '{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}' },
      { type: 'error', message: 'Gemini stream ended without a finishReason' },
    ]);
  });
});
