import { extractGeminiError, parseBatchEmbed, parseGenerateContent } from '../../../../shared/providers/gemini/response.mapper';
import { UpstreamError } from '../../../../shared/providers/upstream-error';

// Shaped after https://ai.google.dev/api/generate-content#generatecontentresponse
const responseWithLogprobs = {
  candidates: [
    {
      content: { role: 'model', parts: [{ text: 'Considering the options…', thought: true }, { text: 'Yes' }] },
      finishReason: 'STOP',
      avgLogprobs: -0.0123,
      logprobsResult: {
        topCandidates: [
          {
            candidates: [
              { token: 'Yes', tokenId: 9820, logProbability: -0.0123 },
              { token: 'No', tokenId: 1294, logProbability: -4.41 },
            ],
          },
        ],
        chosenCandidates: [{ token: 'Yes', tokenId: 9820, logProbability: -0.0123 }],
      },
      index: 0,
    },
  ],
  usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 1, totalTokenCount: 151, cachedContentTokenCount: 64, thoughtsTokenCount: 30, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 120 }] },
  modelVersion: 'gemini-2.5-flash',
  responseId: 'mUvWaLyYB7Wq1dkP',
};

describe('Gemini generateContent → TextResult', () => {
  it('maps thoughts, text, logprobs, usageMetadata and modelVersion', () => {
    expect(parseGenerateContent(responseWithLogprobs)).toEqual({
      output: [
        { type: 'reasoning', id: 'rs_mUvWaLyYB7Wq1dkP', summary: [{ type: 'summary_text', text: 'Considering the options…' }] },
        { type: 'message', id: 'msg_mUvWaLyYB7Wq1dkP', role: 'assistant', content: [{ type: 'output_text', text: 'Yes' }] },
      ],
      finishReason: 'stop',
      // output counts thinking too (1 + 30)
      usage: { inputTokens: 120, outputTokens: 31, cachedTokens: 64, reasoningTokens: 30 },
      logprobs: [{ token: 'Yes', logprob: -0.0123, top: [{ token: 'Yes', logprob: -0.0123 }, { token: 'No', logprob: -4.41 }] }],
      modelVersion: 'gemini-2.5-flash',
      upstreamId: 'mUvWaLyYB7Wq1dkP',
    });
  });

  it('maps function calls and calls the finish tool_calls', () => {
    const reply = {
      candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { id: 'g-1', name: 'get_time', args: {} } }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5 },
      responseId: 'r1',
    };
    const result = parseGenerateContent(reply);
    expect(result.output).toEqual([
      { type: 'function_call', id: 'fc_call_r1_0', call_id: 'call_r1_0', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', id: 'fc_g-1', call_id: 'g-1', name: 'get_time', arguments: '{}' },
    ]);
    expect(result.finishReason).toBe('tool_calls');
  });

  it.each([
    ['MAX_TOKENS', 'length'],
    ['SAFETY', 'content_filter'],
    ['RECITATION', 'content_filter'],
    ['MALFORMED_FUNCTION_CALL', 'error'],
  ])('maps finishReason %s to %s', (reason, finish) => {
    const reply = { candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: reason }] };
    expect(parseGenerateContent(reply).finishReason).toBe(finish);
  });

  it('answers a blocked prompt as content_filter and a reply with nothing as malformed', () => {
    const blocked = { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 8 } };
    expect(parseGenerateContent(blocked)).toEqual({ output: [], finishReason: 'content_filter', usage: { inputTokens: 8, outputTokens: 0 } });
    expect(() => parseGenerateContent({})).toThrow(UpstreamError);
  });

  it('reads the error body and its status', () => {
    const body = { error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' } };
    expect(extractGeminiError(body)).toEqual({ message: 'Resource has been exhausted (e.g. check quota).', reason: 'rate_limited' });
    expect(extractGeminiError([body])).toMatchObject({ reason: 'rate_limited' });
  });
});

describe('Gemini batchEmbedContents → EmbeddingResult', () => {
  const req = { model: 'gemini-embedding-001', inputs: [{ type: 'text' as const, text: 'hello world!' }, { type: 'text' as const, text: 'abcd' }] };

  it('keeps input order and estimates tokens, which Gemini does not report', () => {
    const reply = { embeddings: [{ values: [0.1, 0.2] }, { values: [0.3, 0.4] }] };
    expect(parseBatchEmbed(reply, req)).toEqual({ vectors: [[0.1, 0.2], [0.3, 0.4]], usage: { inputTokens: 4 } });
  });

  it('refuses a vector count that does not match the inputs', () => {
    expect(() => parseBatchEmbed({ embeddings: [{ values: [1] }] }, req)).toThrow(UpstreamError);
  });
});
