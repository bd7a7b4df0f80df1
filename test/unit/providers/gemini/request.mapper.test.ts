import { geminiAdapter } from '../../../../shared/providers/gemini';
import { buildBatchEmbedRequest, buildGenerateContentRequest, toGeminiSchema } from '../../../../shared/providers/gemini/request.mapper';
import type { TextRequest } from '../../../../shared/providers/provider.types';
import { UpstreamError } from '../../../../shared/providers/upstream-error';

const base: TextRequest = { model: 'gemini-2.5-flash', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }], stream: false };

describe('Gemini generateContent request', () => {
  it('maps every TextRequest field Gemini has', () => {
    const req: TextRequest = {
      model: 'gemini-2.5-flash',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Answer in French.' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather here?' },
            { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
            { type: 'input_image', image_url: 'https://example.com/paris.jpg' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', call_id: 'c2', name: 'get_time', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: '{"temp":21}' },
        { type: 'function_call_output', call_id: 'c2', output: '14:00' },
      ],
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Weather by city',
          parameters: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
        },
      ],
      toolChoice: { type: 'function', name: 'get_weather' },
      maxOutputTokens: 512,
      temperature: 0.3,
      topP: 0.8,
      topK: 20,
      presencePenalty: 0.5,
      frequencyPenalty: 0.25,
      seed: 3,
      stop: ['END'],
      reasoning: { effort: 'low', summary: 'auto' },
      textFormat: { type: 'json_schema', name: 'answer', schema: { type: 'object', properties: { temp: { type: ['number', 'null'] } } } },
      logprobs: true,
      topLogprobs: 4,
      stream: false,
    };
    const spec = buildGenerateContentRequest(req, 'AIza-test');
    expect(spec).toMatchObject({ method: 'POST', path: '/models/gemini-2.5-flash:generateContent' });
    expect(spec.headers['x-goog-api-key']).toBe('AIza-test');
    expect(spec.body).toEqual({
      systemInstruction: { parts: [{ text: 'Be brief.\n\nAnswer in French.' }] },
      contents: [
        {
          role: 'user',
          parts: [{ text: 'Weather here?' }, { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }, { fileData: { fileUri: 'https://example.com/paris.jpg', mimeType: 'image/jpeg' } }],
        },
        {
          role: 'model',
          parts: [
            { text: 'Checking.' },
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'skip_thought_signature_validator' },
            { functionCall: { name: 'get_time', args: {} }, thoughtSignature: 'skip_thought_signature_validator' },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { output: { temp: 21 } } } },
            { functionResponse: { name: 'get_time', response: { output: '14:00' } } },
          ],
        },
      ],
      tools: [
        {
          functionDeclarations: [
            { name: 'get_weather', description: 'Weather by city', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } }, required: ['city'] } },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
      generationConfig: {
        temperature: 0.3,
        topP: 0.8,
        topK: 20,
        maxOutputTokens: 512,
        presencePenalty: 0.5,
        frequencyPenalty: 0.25,
        seed: 3,
        stopSequences: ['END'],
        responseMimeType: 'application/json',
        responseSchema: { type: 'OBJECT', properties: { temp: { type: 'NUMBER', nullable: true } } },
        responseLogprobs: true,
        logprobs: 4,
        thinkingConfig: { thinkingBudget: 1024, includeThoughts: true },
      },
    });
  });

  it('streams from :streamGenerateContent?alt=sse and sends no empty config', () => {
    const spec = buildGenerateContentRequest({ ...base, stream: true }, 'k');
    expect(spec.path).toBe('/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(spec.body).toEqual({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] });
  });

  it('turns thinking off and maps string tool choices', () => {
    const body = buildGenerateContentRequest({ ...base, reasoning: { enabled: false }, toolChoice: 'none', textFormat: { type: 'json_object' } }, 'k').body;
    expect(body).toMatchObject({ toolConfig: { functionCallingConfig: { mode: 'NONE' } }, generationConfig: { thinkingConfig: { thinkingBudget: 0 }, responseMimeType: 'application/json' } });
  });

  it('refuses a function output with no matching call', () => {
    expect(() => buildGenerateContentRequest({ ...base, input: [{ type: 'function_call_output', call_id: 'x', output: '1' }] }, 'k')).toThrow(UpstreamError);
  });

  it('inlines local $refs and turns const into enum', () => {
    const schema = { type: 'object', properties: { kind: { $ref: '#/$defs/Kind' } }, $defs: { Kind: { const: 'a', description: 'd' } } };
    expect(toGeminiSchema(schema)).toEqual({ type: 'OBJECT', properties: { kind: { enum: ['a'], description: 'd' } } });
  });
});

describe('Gemini batchEmbedContents request', () => {
  it('sends one request per input with the model resource and dimensions', () => {
    const spec = buildBatchEmbedRequest(
      { model: 'gemini-embedding-001', inputs: [{ type: 'text', text: 'a' }, { type: 'multimodal', content: [{ type: 'text', text: 'b' }, { type: 'image_url', url: 'data:image/png;base64,AAA=' }] }], dimensions: 768 },
      'k',
    );
    expect(spec.path).toBe('/models/gemini-embedding-001:batchEmbedContents');
    expect(spec.body).toEqual({
      requests: [
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'a' }] }, outputDimensionality: 768 },
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'b' }, { inlineData: { mimeType: 'image/png', data: 'AAA=' } }] }, outputDimensionality: 768 },
      ],
    });
  });

  it('declares text, embeddings and logprobs in the manifest', () => {
    expect(geminiAdapter.supports).toMatchObject({ text: true, embeddings: true, images: false, logprobs: true });
  });
});
