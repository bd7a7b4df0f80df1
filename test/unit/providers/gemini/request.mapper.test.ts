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
    expect(spec.warnings).toEqual(["additionalProperties in the parameters of tool 'get_weather' was left out of the call to gemini-2.5-flash: Gemini's Schema cannot express it"]);
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
    expect(toGeminiSchema(schema)).toEqual({ schema: { type: 'OBJECT', properties: { kind: { enum: ['a'], description: 'd' } } }, dropped: [] });
  });

  it('sends a nullable enum as a nullable string enum (Gemini enums are strings), and names what it cannot express', () => {
    // What OpenAI's strict mode asks for an optional enum.
    const unit = { type: ['string', 'null'], enum: ['c', 'f', null] };
    expect(toGeminiSchema(unit)).toEqual({ schema: { type: 'STRING', nullable: true, enum: ['c', 'f'] }, dropped: [] });
    expect(toGeminiSchema({ type: 'integer', enum: [1, 2], not: { const: 3 } })).toEqual({ schema: { type: 'INTEGER' }, dropped: ['enum of non-string values', 'not'] });
    expect(toGeminiSchema({ type: 'object', additionalProperties: true, oneOf: [{ type: 'string' }] })).toEqual({ schema: { type: 'OBJECT', anyOf: [{ type: 'STRING' }] }, dropped: [] });
    const strict = { type: 'object', properties: { unit }, required: ['unit'], additionalProperties: false };
    const spec = buildGenerateContentRequest({ ...base, textFormat: { type: 'json_schema', name: 'w', schema: strict, strict: true } }, 'k');
    expect((spec.body as { generationConfig: { responseSchema: unknown } }).generationConfig.responseSchema).toEqual({
      type: 'OBJECT',
      properties: { unit: { type: 'STRING', nullable: true, enum: ['c', 'f'] } },
      required: ['unit'],
    });
    expect(spec.warnings).toEqual([
      "additionalProperties in the response format 'w' was left out of the call to gemini-2.5-flash: Gemini's Schema cannot express it",
      "strict is not enforced by gemini-2.5-flash: the response format 'w' guide the output but Gemini does not guarantee it matches them",
    ]);
  });

  it('keeps thinking budgets within the model family’s documented range', () => {
    const budget = (model: string, reasoning: TextRequest['reasoning']) => {
      const spec = buildGenerateContentRequest({ ...base, model, reasoning }, 'k');
      return { budget: (spec.body as { generationConfig?: { thinkingConfig?: { thinkingBudget?: number } } }).generationConfig?.thinkingConfig?.thinkingBudget, warnings: spec.warnings ?? [] };
    };
    expect(budget('gemini-2.5-flash', { effort: 'max' })).toEqual({ budget: 24576, warnings: [] });
    expect(budget('gemini-2.5-pro', { effort: 'max' })).toEqual({ budget: 32768, warnings: [] });
    expect(budget('gemini-2.5-flash', { enabled: false })).toEqual({ budget: 0, warnings: [] });
    expect(budget('gemini-2.5-pro', { enabled: false })).toEqual({ budget: 128, warnings: [expect.stringMatching(/^Value "none" of parameter 'reasoning.effort' is not offered by gemini-2.5-pro \(it cannot turn thinking off\): 128 was used instead/)] });
    expect(budget('gemini-2.5-flash-lite', { maxTokens: 100 })).toEqual({ budget: 512, warnings: [expect.stringMatching(/takes budgets from 512 to 24576/)] });
    expect(budget('gemini-2.0-flash', { effort: 'high' })).toEqual({ budget: undefined, warnings: [expect.stringMatching(/^reasoning was left out .*does not think/)] });
  });

  it('refuses a conversation of system messages only, and moves a later system message with a warning', () => {
    const sys = (text: string): TextRequest['input'][number] => ({ type: 'message', role: 'system', content: [{ type: 'input_text', text }] });
    expect(() => buildGenerateContentRequest({ ...base, input: [sys('Say hi.')] }, 'k')).toThrow(/at least one user or model message/);
    const spec = buildGenerateContentRequest({ ...base, input: [...base.input, sys('Now in French.')] }, 'k');
    expect(spec.body).toMatchObject({ systemInstruction: { parts: [{ text: 'Now in French.' }] } });
    expect(spec.warnings).toEqual([expect.stringMatching(/^A system message in the middle of the conversation was moved/)]);
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
