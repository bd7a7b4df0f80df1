import OpenAI from 'openai';
import { request } from 'undici';
import { startFakeProvider } from '../../../fakes/fake-provider';
import type { FakeProvider } from '../../../fakes/fake-provider';
import { parseFakeArgs } from '../../../fakes/main';
import { waitFor } from '../../helpers/until';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- loosely typed wire JSON keeps the assertions readable
type J = Record<string, any>;

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const OPENAI = { authorization: 'Bearer sk-test' };
const ANTHROPIC = { 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01' };
const GEMINI = { 'x-goog-api-key': 'g-key' };
const REPLICATE = { authorization: 'Bearer r8_test' };

function call(path: string, body?: unknown, headers: Record<string, string> = {}, init: RequestInit = {}): Promise<Response> {
  return fetch(fake.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    ...init,
  });
}
async function json(path: string, body: unknown, headers: Record<string, string>, status = 200): Promise<J> {
  const res = await call(path, body, headers);
  const out = (await res.json()) as J;
  expect({ status: res.status, out }).toMatchObject({ status });
  return out;
}
/** Parses an SSE body into {event, data} pairs (LF or CRLF framing). */
async function events(res: Response): Promise<Array<{ event?: string; data: string }>> {
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const text = await res.text();
  return text
    .split(/\r?\n\r?\n/)
    .filter((f) => f.trim() !== '')
    .map((frame) => {
      const out: { event?: string; data: string } = { data: '' };
      for (const line of frame.split(/\r?\n/)) {
        if (line.startsWith('event: ')) out.event = line.slice(7);
        else if (line.startsWith('data: ')) out.data += line.slice(6);
      }
      return out;
    });
}
const chatBody = (extra: J = {}): J => ({ model: 'gpt-4o', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello there' }], ...extra });

describe('OpenAI chat completions', () => {
  it('answers non-stream with echo text and detailed usage', async () => {
    fake.setKnobs({ cachedTokens: 2, reasoningTokens: 3 });
    const out = await json('/openai/v1/chat/completions', chatBody(), OPENAI);
    expect(out).toMatchObject({ object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'Echo: hello there' }, finish_reason: 'stop', logprobs: null }] });
    expect(out.usage).toEqual({
      prompt_tokens: 5, // ceil(("be brief" + "hello there").length / 4)
      completion_tokens: 5 + 3,
      total_tokens: 13,
      prompt_tokens_details: { cached_tokens: 2, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 3, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: '/openai/v1/chat/completions', body: { model: 'gpt-4o' } });
  });

  it('streams chunks, a usage chunk with empty choices, then [DONE]', async () => {
    fake.setKnobs({ text: 'one two three four five', streamChunks: 5, promptTokens: 7, completionTokens: 9 });
    const evs = await events(await call('/openai/v1/chat/completions', chatBody({ stream: true, stream_options: { include_usage: true } }), OPENAI));
    expect(evs.at(-1)?.data).toBe('[DONE]');
    const chunks = evs.slice(0, -1).map((e) => JSON.parse(e.data) as J);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id)).toBe(true);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '', refusal: null });
    expect(chunks.slice(1, -2).map((c) => c.choices[0].delta.content)).toHaveLength(5);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('one two three four five');
    expect(chunks.at(-2)?.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 9, total_tokens: 16 } });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('returns knob logprobs with top_logprobs, argmax text, and honours noLogprobs', async () => {
    fake.setKnobs({ logprobs: [{ Hi: -0.1, Yo: -2 }, { '!': -0.2, '.': -1.5, '?': -3 }] });
    const out = await json('/openai/v1/chat/completions', chatBody({ logprobs: true, top_logprobs: 2 }), OPENAI);
    expect(out.choices[0].message.content).toBe('Hi!');
    expect(out.choices[0].logprobs.content).toEqual([
      { token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105] }, { token: 'Yo', logprob: -2, bytes: [89, 111] }] },
      { token: '!', logprob: -0.2, bytes: [33], top_logprobs: [{ token: '!', logprob: -0.2, bytes: [33] }, { token: '.', logprob: -1.5, bytes: [46] }] },
    ]);
    const streamed = (await events(await call('/openai/v1/chat/completions', chatBody({ logprobs: true, top_logprobs: 1, stream: true }), OPENAI)))
      .slice(1, -2)
      .flatMap((e) => (JSON.parse(e.data) as J).choices[0].logprobs.content as J[]);
    expect(streamed.map((t) => t.token)).toEqual(['Hi', '!']);
    fake.setKnobs({ logprobs: [{ Hi: -0.1 }], noLogprobs: true });
    const none = await json('/openai/v1/chat/completions', chatBody({ logprobs: true }), OPENAI);
    expect(none.choices[0]).toMatchObject({ message: { content: 'Hi' }, logprobs: null });
  });

  it('synthesises logprobs for plain text, stops at stop sequences and truncates at max_tokens', async () => {
    fake.setKnobs({ text: 'alpha beta gamma' });
    const lp = await json('/openai/v1/chat/completions', chatBody({ logprobs: true, top_logprobs: 3 }), OPENAI);
    expect(lp.choices[0].logprobs.content.map((t: J) => t.token)).toEqual(['alpha', ' beta', ' gamma']);
    expect(lp.choices[0].logprobs.content[0].top_logprobs).toHaveLength(3);
    const stop = await json('/openai/v1/chat/completions', chatBody({ stop: [' gamma', 'beta'] }), OPENAI);
    expect(stop.choices[0]).toMatchObject({ message: { content: 'alpha ' }, finish_reason: 'stop' });
    const cut = await json('/openai/v1/chat/completions', chatBody({ max_tokens: 2 }), OPENAI);
    expect(cut.choices[0]).toMatchObject({ message: { content: 'alpha be' }, finish_reason: 'length' });
    expect(cut.usage.completion_tokens).toBe(2);
  });

  it('answers with tool calls, streamed as argument fragments', async () => {
    fake.setKnobs({ toolCall: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    const out = await json('/openai/v1/chat/completions', chatBody(), OPENAI);
    expect(out.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { content: null, tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] } });
    expect(out.choices[0].message.tool_calls[0].id).toMatch(/^call_/);
    const chunks = (await events(await call('/openai/v1/chat/completions', chatBody({ stream: true }), OPENAI))).slice(0, -1).map((e) => JSON.parse(e.data) as J);
    expect(chunks[0].choices[0].delta.tool_calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(chunks.map((c) => c.choices[0].delta.tool_calls?.[0].function.arguments ?? '').join('')).toBe('{"city":"Paris"}');
    expect(chunks.at(-1)?.choices[0].finish_reason).toBe('tool_calls');
  });

  it('answers the tier asked for (default for auto or none), or the serviceTier knob\'s: a priority call served at default', async () => {
    expect((await json('/openai/v1/chat/completions', chatBody({ service_tier: 'priority' }), OPENAI)).service_tier).toBe('priority');
    expect((await json('/openai/v1/chat/completions', chatBody({ service_tier: 'auto' }), OPENAI)).service_tier).toBe('default');
    expect((await json('/openai/v1/chat/completions', chatBody(), OPENAI)).service_tier).toBe('default');
    fake.setKnobs({ serviceTier: 'default' });
    expect((await json('/openai/v1/chat/completions', chatBody({ service_tier: 'priority' }), OPENAI)).service_tier).toBe('default');
    expect((await json('/openai/v1/responses', { model: 'gpt-4.1-mini', input: 'hi', service_tier: 'flex' }, OPENAI)).service_tier).toBe('default');
  });

  it('validates requests and auth with the OpenAI error body', async () => {
    const missing = await json('/openai/v1/chat/completions', { model: 'gpt-4o' }, OPENAI, 400);
    expect(missing).toEqual({ error: { message: "Missing required parameter: 'messages'.", type: 'invalid_request_error', param: 'messages', code: 'missing_required_parameter' } });
    const role = await json('/openai/v1/chat/completions', { model: 'm', messages: [{ role: 'robot', content: 'x' }] }, OPENAI, 400);
    expect(role.error.param).toBe('messages[0].role');
    const noKey = await json('/openai/v1/chat/completions', chatBody(), {}, 401);
    expect(noKey.error.type).toBe('invalid_request_error');
    const badJson = await call('/openai/v1/chat/completions', undefined, OPENAI, { method: 'POST', body: '{nope' });
    expect(badJson.status).toBe(400);
    expect(fake.requests.at(-1)?.body).toBe('{nope');
  });

  it('is consumable by the official OpenAI SDK (chat + Responses streams)', async () => {
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${fake.url}/openai/v1`, maxRetries: 0 });
    fake.setKnobs({ text: 'sdk says hi' });
    const done = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    expect(done.choices[0].message.content).toBe('sdk says hi');
    let text = '';
    for await (const chunk of await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], stream: true })) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('sdk says hi');
    const stream = client.responses.stream({ model: 'gpt-4o', input: 'x' });
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('sdk says hi');
  });
});

describe('OpenAI Responses, embeddings, images, models', () => {
  it('returns a Response object with usage details', async () => {
    fake.setKnobs({ cachedTokens: 1, reasoningTokens: 2 });
    const out = await json('/openai/v1/responses', { model: 'gpt-4o', instructions: 'be nice', input: [{ role: 'user', content: [{ type: 'input_text', text: 'ping' }] }] }, OPENAI);
    expect(out).toMatchObject({ object: 'response', status: 'completed', model: 'gpt-4o', instructions: 'be nice' });
    expect(out.output).toEqual([{ id: expect.stringMatching(/^msg_/), type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'Echo: ping' }] }]);
    expect(out.usage).toEqual({ input_tokens: 3, input_tokens_details: { cached_tokens: 1 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 8 });
  });

  it('streams the Responses event sequence with sequence numbers', async () => {
    fake.setKnobs({ text: 'abcdef', streamChunks: 3 });
    const evs = await events(await call('/openai/v1/responses', { model: 'gpt-4o', input: 'q', stream: true }, OPENAI));
    const datas = evs.map((e) => JSON.parse(e.data) as J);
    expect(evs.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(datas.map((d) => d.type)).toEqual(evs.map((e) => e.event));
    expect(datas.map((d) => d.sequence_number)).toEqual(datas.map((_, i) => i));
    expect(datas.filter((d) => d.type === 'response.output_text.delta').map((d) => d.delta)).toEqual(['ab', 'cd', 'ef']);
    expect(datas.at(-1)?.response).toMatchObject({ status: 'completed', output: [{ content: [{ text: 'abcdef' }] }], usage: { output_tokens: 2 } });
  });

  it('streams function calls and reports max_output_tokens as incomplete', async () => {
    fake.setKnobs({ toolCall: { name: 'f', arguments: '{"a":1}' } });
    const evs = await events(await call('/openai/v1/responses', { model: 'gpt-4o', input: 'q', stream: true }, OPENAI));
    expect(evs.map((e) => e.event)).toContain('response.function_call_arguments.done');
    expect((JSON.parse(evs.at(-1)?.data ?? '{}') as J).response.output[0]).toMatchObject({ type: 'function_call', name: 'f', arguments: '{"a":1}', call_id: expect.stringMatching(/^call_/) });
    fake.setKnobs({ text: 'a long answer here, '.repeat(20) });
    const cut = await json('/openai/v1/responses', { model: 'gpt-4o', input: 'q', max_output_tokens: 16 }, OPENAI);
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  });

  it('returns deterministic embeddings, float and base64 (little-endian float32)', async () => {
    const floats = await json('/openai/v1/embeddings', { model: 'text-embedding-3-small', input: ['a', 'b'], dimensions: 16 }, OPENAI);
    expect(floats.data).toHaveLength(2);
    expect(floats.data[0]).toMatchObject({ object: 'embedding', index: 0 });
    expect(floats.data[0].embedding).toHaveLength(16);
    expect(floats.usage).toEqual({ prompt_tokens: 2, total_tokens: 2 });
    const b64 = await json('/openai/v1/embeddings', { model: 'text-embedding-3-small', input: 'a', dimensions: 16, encoding_format: 'base64' }, OPENAI);
    const buf = Buffer.from(b64.data[0].embedding as string, 'base64');
    const decoded = Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(i * 4));
    expect(decoded).toEqual(floats.data[0].embedding);
    fake.setKnobs({ embeddingDims: 3 });
    const small = await json('/openai/v1/embeddings', { model: 'm', input: 'a' }, OPENAI);
    expect(small.data[0].embedding).toHaveLength(3);
    await json('/openai/v1/embeddings', { model: 'm', input: '' }, OPENAI, 400);
  });

  it('generates images as URLs served by the fake, or as b64_json', async () => {
    const out = await json('/openai/v1/images/generations', { model: 'dall-e-3', prompt: 'a cat', n: 2 }, OPENAI);
    expect(out.data).toHaveLength(2);
    expect(out.data[0].revised_prompt).toBe('a cat');
    const img = await fetch(out.data[0].url as string);
    expect(img.headers.get('content-type')).toBe('image/png');
    const bytes = Buffer.from(await img.arrayBuffer());
    expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const b64 = await json('/openai/v1/images/generations', { model: 'gpt-image-1', prompt: 'a cat' }, OPENAI);
    expect(Buffer.from(b64.data[0].b64_json as string, 'base64')).toEqual(bytes);
    expect(b64.usage).toMatchObject({ input_tokens: 2 });
    const models = await (await call('/openai/v1/models', undefined, OPENAI)).json();
    expect(models).toMatchObject({ object: 'list', data: expect.arrayContaining([expect.objectContaining({ id: 'gpt-4o', object: 'model' })]) });
  });
});

describe('Anthropic messages', () => {
  const body = (extra: J = {}): J => ({ model: 'claude-sonnet-4-5', max_tokens: 100, system: 'sys', messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }], ...extra });

  it('answers a Message with cache usage split out', async () => {
    fake.setKnobs({ promptTokens: 10, cachedTokens: 4, completionTokens: 6 });
    const out = await json('/anthropic/v1/messages', body(), ANTHROPIC);
    expect(out).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: 'Echo: hello' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 6, cache_creation_input_tokens: 0, cache_read_input_tokens: 4, output_tokens: 6, service_tier: 'standard' },
    });
    const stopped = await json('/anthropic/v1/messages', body({ stop_sequences: ['llo'] }), ANTHROPIC);
    expect(stopped).toMatchObject({ content: [{ text: 'Echo: he' }], stop_reason: 'stop_sequence', stop_sequence: 'llo' });
    const capped = await json('/anthropic/v1/messages', body({ max_tokens: 1 }), ANTHROPIC);
    expect(capped).toMatchObject({ content: [{ text: 'Echo' }], stop_reason: 'max_tokens' });
  });

  it('streams the real event sequence', async () => {
    fake.setKnobs({ text: 'abcd', streamChunks: 2 });
    const evs = await events(await call('/anthropic/v1/messages', body({ stream: true }), ANTHROPIC));
    expect(evs.map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    const datas = evs.map((e) => JSON.parse(e.data) as J);
    expect(datas.map((d) => d.type)).toEqual(evs.map((e) => e.event));
    expect(datas[0].message).toMatchObject({ type: 'message', role: 'assistant', content: [], stop_reason: null });
    expect(datas[3]).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ab' } });
    expect(datas[6]).toEqual({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } });
  });

  it('handles tools: tool_use blocks and input_json_delta streaming', async () => {
    fake.setKnobs({ toolCall: { name: 'lookup', arguments: '{"q":"x"}' } });
    const conversation = body({
      tools: [{ name: 'lookup', description: 'd', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'find x' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'found' }] },
      ],
    });
    const out = await json('/anthropic/v1/messages', conversation, ANTHROPIC);
    expect(out).toMatchObject({ stop_reason: 'tool_use', content: [{ type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'lookup', input: { q: 'x' } }] });
    const datas = (await events(await call('/anthropic/v1/messages', { ...conversation, stream: true }, ANTHROPIC))).map((e) => JSON.parse(e.data) as J);
    expect(datas[1].content_block).toMatchObject({ type: 'tool_use', name: 'lookup', input: {} });
    expect(datas.filter((d) => d.type === 'content_block_delta').map((d) => d.delta.partial_json).join('')).toBe('{"q":"x"}');
  });

  it('validates headers and body with the Anthropic error body', async () => {
    const noKey = await json('/anthropic/v1/messages', body(), { 'anthropic-version': '2023-06-01' }, 401);
    expect(noKey).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const noVersion = await json('/anthropic/v1/messages', body(), { 'x-api-key': 'k' }, 400);
    expect(noVersion.error.type).toBe('invalid_request_error');
    const noMax = await json('/anthropic/v1/messages', body({ max_tokens: undefined }), ANTHROPIC, 400);
    expect(noMax).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
  });
});

describe('Gemini', () => {
  const body = (extra: J = {}): J => ({ systemInstruction: { parts: [{ text: 'sys' }] }, contents: [{ role: 'user', parts: [{ text: 'hola' }] }], ...extra });

  it('generates content with usageMetadata (key via query string)', async () => {
    fake.setKnobs({ promptTokens: 10, completionTokens: 7, reasoningTokens: 2, cachedTokens: 3 });
    const out = await json('/gemini/v1beta/models/gemini-2.5-flash:generateContent?key=abc', body(), {});
    expect(out).toMatchObject({
      candidates: [{ content: { role: 'model', parts: [{ text: 'Echo: hola' }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, thoughtsTokenCount: 2, cachedContentTokenCount: 3, totalTokenCount: 17 },
      modelVersion: 'gemini-2.5-flash',
    });
    const capped = await json('/gemini/v1beta/models/g:generateContent', body({ generationConfig: { maxOutputTokens: 1 } }), GEMINI);
    expect(capped.candidates[0]).toMatchObject({ finishReason: 'MAX_TOKENS', content: { parts: [{ text: 'Echo' }] } });
  });

  it('streams SSE chunks (CRLF framing) and JSON arrays without alt=sse', async () => {
    fake.setKnobs({ text: 'abcdefgh', streamChunks: 4 });
    const res = await call('/gemini/v1beta/models/g:streamGenerateContent?alt=sse', body(), GEMINI);
    const raw = await res.clone().text();
    expect(raw).toContain('\r\n\r\n');
    const chunks = (await events(res)).map((e) => JSON.parse(e.data) as J);
    expect(chunks.map((c) => c.candidates[0].content.parts[0].text)).toEqual(['ab', 'cd', 'ef', 'gh']);
    expect(chunks.map((c) => c.candidates[0].finishReason)).toEqual([undefined, undefined, undefined, 'STOP']);
    expect(chunks.at(-1)?.usageMetadata.candidatesTokenCount).toBe(2);
    const arr = (await (await call('/gemini/v1beta/models/g:streamGenerateContent', body(), GEMINI)).json()) as J[];
    expect(arr.map((c) => c.candidates[0].content.parts[0].text).join('')).toBe('abcdefgh');
  });

  it('returns logprobsResult when responseLogprobs is set', async () => {
    fake.setKnobs({ logprobs: [{ Si: -0.5, No: -1 }, { '!': -0.1 }] });
    const out = await json('/gemini/v1beta/models/g:generateContent', body({ generationConfig: { responseLogprobs: true, logprobs: 2 } }), GEMINI);
    const cand = out.candidates[0];
    expect(cand.content.parts[0].text).toBe('Si!');
    expect(cand.logprobsResult).toEqual({
      chosenCandidates: [{ token: 'Si', logProbability: -0.5 }, { token: '!', logProbability: -0.1 }],
      logProbabilitySum: -0.6,
      topCandidates: [{ candidates: [{ token: 'Si', logProbability: -0.5 }, { token: 'No', logProbability: -1 }] }, { candidates: [{ token: '!', logProbability: -0.1 }] }],
    });
    expect(cand.avgLogprobs).toBeCloseTo(-0.3);
    const plain = await json('/gemini/v1beta/models/g:generateContent', body(), GEMINI);
    expect(plain.candidates[0].logprobsResult).toBeUndefined();
  });

  it('answers function calls and embeddings', async () => {
    fake.setKnobs({ toolCall: { name: 'f', arguments: '{"x":1}' } });
    const fc = await json('/gemini/v1beta/models/g:generateContent', body(), GEMINI);
    expect(fc.candidates[0].content.parts).toEqual([{ functionCall: { name: 'f', args: { x: 1 } } }]);
    const one = await json('/gemini/v1beta/models/gemini-embedding-001:embedContent', { content: { parts: [{ text: 'a' }] }, outputDimensionality: 5 }, GEMINI);
    expect(one.embedding.values).toHaveLength(5);
    const batch = await json('/gemini/v1beta/models/gemini-embedding-001:batchEmbedContents', { requests: [{ model: 'models/gemini-embedding-001', content: { parts: [{ text: 'a' }] }, outputDimensionality: 5 }, { content: { parts: [{ text: 'b' }] } }] }, GEMINI);
    expect(batch.embeddings[0].values).toEqual(one.embedding.values);
    expect(batch.embeddings[1].values).toHaveLength(8);
  });

  it('validates with the Google error body', async () => {
    const noKey = await json('/gemini/v1beta/models/g:generateContent', body(), {}, 403);
    expect(noKey.error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
    const bad = await json('/gemini/v1beta/models/g:generateContent', {}, GEMINI, 400);
    expect(bad.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    await json('/gemini/v1beta/models/g:embedContent', { content: { parts: [] } }, GEMINI, 400);
  });
});

describe('Replicate predictions', () => {
  const create = (model: string, input: J, headers: Record<string, string> = REPLICATE): Promise<J> => json(`/replicate/v1/models/${model}/predictions`, { input }, headers, 201);
  const poll = (p: J): Promise<J> => json(new URL(p.urls.get as string).pathname, undefined, REPLICATE);

  it('goes starting -> processing -> succeeded and serves the image', async () => {
    fake.setKnobs({ replicateSteps: 2 });
    const p = await create('black-forest-labs/flux-schnell', { prompt: 'cat', num_outputs: 2 });
    expect(p).toMatchObject({ model: 'black-forest-labs/flux-schnell', status: 'starting', output: null, error: null, logs: '', input: { prompt: 'cat' }, metrics: {} });
    expect(p.urls.cancel).toBe(`${p.urls.get}/cancel`);
    expect((await poll(p)).status).toBe('processing');
    expect((await poll(p)).status).toBe('processing');
    const done = await poll(p);
    expect(done).toMatchObject({ status: 'succeeded', metrics: { predict_time: expect.any(Number), image_output_count: 2 } });
    expect(done.output).toHaveLength(2);
    const file = await fetch(done.output[0] as string);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await file.arrayBuffer()).subarray(1, 4).toString()).toBe('PNG');
  });

  it('reports video/audio durations and serves media bytes', async () => {
    fake.setKnobs({ replicateSteps: 0, mediaDurationSeconds: 6 });
    const video = await poll(await create('kwaivgi/kling-video', { prompt: 'x' }));
    expect(video).toMatchObject({ status: 'succeeded', metrics: { video_output_duration_seconds: 6 } });
    const mp4 = await fetch(video.output as string);
    expect(mp4.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await mp4.arrayBuffer()).subarray(4, 8).toString()).toBe('ftyp');
    const audio = await poll(await create('some/model', { prompt: 'x', output_format: 'wav' }));
    expect(audio.metrics.audio_output_duration_seconds).toBe(6);
    expect((await fetch(audio.output as string)).headers.get('content-type')).toBe('audio/wav');
    const sync = await json('/replicate/v1/models/a/b/predictions', { input: {} }, { ...REPLICATE, prefer: 'wait' }, 201);
    expect(sync.status).toBe('succeeded');
  });

  it('fails, cancels, and checks auth and input', async () => {
    fake.setKnobs({ replicateSteps: 0, replicateFail: true });
    const failed = await poll(await create('a/b', {}));
    expect(failed).toMatchObject({ status: 'failed', output: null, error: expect.any(String) });
    fake.setKnobs({ replicateSteps: 5 });
    const p = await create('a/b', {});
    const canceled = await json(new URL(p.urls.cancel as string).pathname, {}, REPLICATE);
    expect(canceled.status).toBe('canceled');
    expect((await poll(p)).status).toBe('canceled');
    const unauth = await json('/replicate/v1/models/a/b/predictions', { input: {} }, {}, 401);
    expect(unauth).toMatchObject({ title: 'Unauthenticated', status: 401 });
    await json('/replicate/v1/models/a/b/predictions', {}, { authorization: 'Token r8' }, 422);
    await json('/replicate/v1/predictions/nope', undefined, REPLICATE, 404);
  });
});

describe('knobs', () => {
  // Every call of a test has ended at the fake before the next test starts (an abort seen late would count there).
  afterEach(() => waitFor('the calls ended at the fake', () => fake.requests.every((r) => r.endedAt !== undefined)));

  it('forces statuses in each format, and failTimes limits them', async () => {
    fake.setKnobs({ status: 429, retryAfterSeconds: 0 });
    const o = await call('/openai/v1/chat/completions', chatBody(), OPENAI);
    expect(o.headers.get('retry-after')).toBe('0');
    expect(await o.json()).toMatchObject({ error: { type: 'requests', code: 'rate_limit_exceeded' } });
    expect(await json('/anthropic/v1/messages', {}, ANTHROPIC, 429)).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(await json('/gemini/v1beta/models/g:generateContent', {}, GEMINI, 429)).toMatchObject({ error: { code: 429, status: 'RESOURCE_EXHAUSTED' } });
    expect(await json('/replicate/v1/predictions/x', undefined, REPLICATE, 429)).toMatchObject({ status: 429, title: 'Request was throttled' });
    fake.setKnobs({ status: 500, failTimes: 2 });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await call('/openai/v1/chat/completions', chatBody(), OPENAI)).status);
    expect(statuses).toEqual([500, 500, 200]);
    fake.setKnobs({ failTimes: 1 });
    expect((await call('/gemini/v1beta/models/g:generateContent', {}, GEMINI)).status).toBe(500);
    expect((await call('/openai/v1/models', undefined, OPENAI)).status).toBe(200);
  });

  it('sends malformed JSON and malformed SSE frames', async () => {
    fake.setKnobs({ malformed: true });
    const res = await call('/openai/v1/chat/completions', chatBody(), OPENAI);
    expect(res.status).toBe(200);
    await expect(res.json()).rejects.toThrow();
    const evs = await events(await call('/anthropic/v1/messages', { model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], stream: true }, ANTHROPIC));
    expect(evs.filter((e) => { try { JSON.parse(e.data); return false; } catch { return true; } })).toHaveLength(1); // prettier-ignore
  });

  it('hangs until the client aborts, and delays by latencyMs', async () => {
    // The client's own timeout ends a call that hangs; one that answered would not reach it.
    fake.setKnobs({ hang: true });
    await expect(call('/openai/v1/models', undefined, OPENAI, { signal: AbortSignal.timeout(200) })).rejects.toMatchObject({ name: 'TimeoutError' });
    // The fake runs in this process: a client timer due before the fake's delay ends fires first, however busy the machine.
    fake.setKnobs({ latencyMs: 150 });
    await expect(call('/openai/v1/models', undefined, OPENAI, { signal: AbortSignal.timeout(100) })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect((await call('/openai/v1/models', undefined, OPENAI)).status).toBe(200);
  });

  it('resets connections, fails mid-stream, and streams endlessly until the client leaves', async () => {
    fake.setKnobs({ resetConnection: true, failTimes: 1 });
    await expect(call('/openai/v1/models', undefined, OPENAI)).rejects.toThrow();
    expect((await call('/openai/v1/models', undefined, OPENAI)).status).toBe(200);

    fake.setKnobs({ failMidStream: true, streamChunks: 4 });
    const res = await call('/openai/v1/chat/completions', chatBody({ stream: true }), OPENAI);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    fake.setKnobs({ failMidStream: true });
    const half = await call('/openai/v1/chat/completions', chatBody(), OPENAI);
    await expect(half.json()).rejects.toThrow();

    fake.setKnobs({ endlessStream: true, chunkDelayMs: 1 });
    const ac = new AbortController();
    const endless = await call('/anthropic/v1/messages', { model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], stream: true }, ANTHROPIC, { signal: ac.signal });
    const reader = (endless.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    while ((text.match(/content_block_delta/g) ?? []).length < 30) text += Buffer.from((await reader.read()).value ?? []).toString();
    ac.abort();
    expect(text).not.toContain('message_stop');
  });

  it('holds a stream after holdAfterChunks deltas until the knobs are set again', async () => {
    fake.setKnobs({ streamChunks: 4, holdAfterChunks: 2 });
    const res = await call('/openai/v1/chat/completions', chatBody({ stream: true }), OPENAI);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    const deltas = () => (text.match(/"content":"[^"]/g) ?? []).length;
    while (deltas() < 2) text += Buffer.from((await reader.read()).value ?? []).toString();
    // Held: after a round trip to the fake (its writes of an unheld stream would all have gone), the call is still open.
    await (await fetch(`${fake.url}/_fake/knobs`)).json();
    expect(deltas()).toBe(2);
    expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)?.endedAt).toBeUndefined();
    fake.setKnobs({});
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += Buffer.from(r.value).toString();
    expect(deltas()).toBe(4);
    expect(text).toContain('[DONE]');
  });

  it('holds a reply with holdReplies until the knobs are set again, or until its client leaves', async () => {
    fake.setKnobs({ holdReplies: true });
    const held = call('/openai/v1/chat/completions', chatBody(), OPENAI);
    await waitFor('the call at the fake', () => fake.requests.filter((r) => r.path.endsWith('/chat/completions') && r.endedAt === undefined).length > 0);
    // Held: after a round trip to the fake, the call is still open.
    await (await fetch(`${fake.url}/_fake/knobs`)).json();
    expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)?.endedAt).toBeUndefined();
    fake.setKnobs({});
    expect((await held).status).toBe(200);

    fake.setKnobs({ holdReplies: true });
    const before = fake.aborted.length;
    const ac = new AbortController();
    const left = call('/openai/v1/chat/completions', chatBody(), OPENAI, { signal: ac.signal });
    await waitFor('the call at the fake', () => fake.requests.filter((r) => r.path.endsWith('/chat/completions') && r.endedAt === undefined).length > 0);
    ac.abort();
    await expect(left).rejects.toThrow();
    expect((await fake.waitForAborted(before + 1)).at(-1)?.path).toBe('/openai/v1/chat/completions');
  });

  it('a stream whose knobs were set again before it reached its hold does not stop there', async () => {
    // A delay between deltas: the 2nd delta is written, and the hold reached only chunkDelayMs later.
    fake.setKnobs({ streamChunks: 4, chunkDelayMs: 200, holdAfterChunks: 2 });
    const res = await call('/openai/v1/chat/completions', chatBody({ stream: true }), OPENAI);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    const deltas = () => (text.match(/"content":"[^"]/g) ?? []).length;
    while (deltas() < 2) text += Buffer.from((await reader.read()).value ?? []).toString();
    // Let go at once: the stream is still in its delay before the hold, then goes on to its end without another call.
    fake.setKnobs({ streamChunks: 4, chunkDelayMs: 200, holdAfterChunks: 2 });
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += Buffer.from(r.value).toString();
    expect(deltas()).toBe(4);
    expect(text).toContain('[DONE]');
  });

  it('records the calls whose caller closed the connection, not the ones it dropped itself', async () => {
    fake.setKnobs({ hang: true });
    await expect(call('/openai/v1/embeddings', { model: 'e', input: 'x' }, OPENAI, { signal: AbortSignal.timeout(100) })).rejects.toThrow();
    const aborted = await fake.waitForAborted(1);
    expect(aborted.map((r) => r.path)).toEqual(['/openai/v1/embeddings']);
    expect(await (await fetch(`${fake.url}/_fake/aborted`)).json()).toMatchObject([{ path: '/openai/v1/embeddings' }]);

    fake.setKnobs({ failMidStream: true, streamChunks: 4 });
    await expect((await call('/openai/v1/chat/completions', chatBody({ stream: true }), OPENAI)).text()).rejects.toThrow();
    fake.setKnobs({ resetConnection: true });
    await expect(call('/openai/v1/models', undefined, OPENAI)).rejects.toThrow();
    fake.setKnobs({});
    await (await call('/openai/v1/models', undefined, OPENAI)).json();
    // Each call is judged when its connection closes: all have.
    await waitFor('the calls ended at the fake', () => fake.requests.every((r) => r.endedAt !== undefined));
    expect(fake.aborted).toHaveLength(1);
    fake.reset();
    expect(fake.aborted).toHaveLength(0);
  });

  it('keeps the last 1000 requests and reset() clears them', async () => {
    const worker = async (): Promise<void> => {
      for (let i = 0; i < 201; i++) await (await request(`${fake.url}/openai/v1/models`, { headers: OPENAI })).body.dump();
    };
    await Promise.all(Array.from({ length: 5 }, worker));
    expect(fake.requests).toHaveLength(1000);
    fake.reset();
    expect(fake.requests).toHaveLength(0);
  });

  it('exposes a control API and closes promptly with hanging sockets open', async () => {
    const other = await startFakeProvider({ knobs: { hang: true } });
    const hanging = fetch(`${other.url}/openai/v1/models`, { headers: OPENAI }).catch((e: unknown) => e);
    await waitFor('the hanging call at the fake', () => other.requests.length === 1);
    expect(await (await fetch(`${other.url}/_fake/knobs`)).json()).toEqual({ hang: true });
    await fetch(`${other.url}/_fake/knobs`, { method: 'POST', body: JSON.stringify({ latencyMs: 1 }) });
    expect((await fetch(`${other.url}/openai/v1/models`, { headers: OPENAI })).status).toBe(200);
    // A hanging socket never ends by itself: close resolves only because it ends every socket, the idle one too.
    await other.close();
    expect(String(await hanging)).toMatch(/fetch failed/);
  });

  it('parses the runnable entry arguments', () => {
    expect(parseFakeArgs(['--port', '4010', '--knobs', '{"latencyMs":5}'])).toEqual({ port: 4010, host: '127.0.0.1', knobs: { latencyMs: 5 } });
    expect(() => parseFakeArgs(['--port', 'x'])).toThrow();
  });
});
