/**
 * The JavaScript clients people use, unchanged, against a running Switchyard (a test app on a real port, the
 * fake providers behind it): the Vercel AI SDK with `@ai-sdk/openai-compatible` and with `@ai-sdk/openai` (bare
 * model ids, reasoning effort), and LangChain JS
 * `@langchain/openai`. The Node `openai` SDK has its own file (text.sdk.test.ts); the Python one runs in
 * python-sdk.test.ts.
 */
import { APICallError, embed, embedMany, generateText, streamText } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createOpenAI } from '@ai-sdk/openai';
import OpenAI from 'openai';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

const TEXT = 'Hello from the fake provider';
// gpt-4.1-mini in the stack catalog: 40 RUB per million prompt tokens, 160 per million completion tokens.
const EXPECTED_COST = (1000 * 40 + 500 * 160) / 1_000_000;

let s: TestStack;
let org: StackOrg;

// A reasoning model and one without reasoning, as in the demo and default catalogs (openai/o4-mini, openai/gpt-4.1).
const REASONING = 'openai/o4-mini';
const PLAIN = 'openai/gpt-4.1';
const endpoint = (upstreamModel: string, supports: string[]) => ({ provider: 'openai', upstreamModel, price: { prompt: 110, completion: 440 }, supports });

beforeAll(async () => {
  s = await createTestStack({
    knobs: { promptTokens: 1000, completionTokens: 500, text: TEXT },
    catalogOverrides: {
      models: {
        [REASONING]: { displayName: 'o4-mini', type: 'chat', endpoints: [endpoint('o4-mini', ['tools', 'reasoning', 'max_tokens', 'stream'])] },
        [PLAIN]: { displayName: 'GPT-4.1', type: 'chat', endpoints: [endpoint('gpt-4.1', ['temperature', 'tools', 'max_tokens', 'stream'])] },
      },
    },
  });
  org = await s.seed({ balance: '100' });
});
afterAll(() => s.close());
beforeEach(() => s.fake.setKnobs({ promptTokens: 1000, completionTokens: 500, text: TEXT }));

describe('Vercel AI SDK (@ai-sdk/openai-compatible)', () => {
  const switchyard = () => createOpenAICompatible({ name: 'switchyard', baseURL: `${s.url}/v1`, apiKey: org.key.key, includeUsage: true });

  it('generateText answers the text with usage, and the raw body carries the cost', async () => {
    // ai 7 keeps the response body only when asked (`include`; `experimental_include` in ai 6, still read by 7)
    const r = await generateText({ model: switchyard().chatModel(STACK_MODELS.chat), prompt: 'Say hello', maxRetries: 0, experimental_include: { responseBody: true } });
    expect(r.text).toBe(TEXT);
    expect(r.finishReason).toBe('stop');
    expect(r.usage).toMatchObject({ inputTokens: 1000, outputTokens: 500, totalTokens: 1500 });
    const body = r.response.body as { usage: { cost_rub: number }; switchyard: unknown };
    expect(body.usage.cost_rub).toBe(EXPECTED_COST);
    expect(r.response.headers?.['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('streamText streams the deltas and ends with usage', async () => {
    const r = streamText({ model: switchyard().chatModel(STACK_MODELS.chat), prompt: 'Stream please', maxRetries: 0 });
    let text = '';
    for await (const delta of r.textStream) text += delta;
    expect(text).toBe(TEXT);
    expect(await r.finishReason).toBe('stop');
    expect(await r.usage).toMatchObject({ inputTokens: 1000, outputTokens: 500 });
  });

  it('embed and embedMany answer float vectors in order', async () => {
    const model = switchyard().embeddingModel(STACK_MODELS.embedding);
    const one = await embed({ model, value: 'alpha', maxRetries: 0 });
    expect(one.embedding.length).toBeGreaterThan(0);
    const many = await embedMany({ model, values: ['alpha', 'beta'], maxRetries: 0 });
    expect(many.embeddings).toHaveLength(2);
    many.embeddings[0].forEach((v, i) => expect(v).toBeCloseTo(one.embedding[i], 6));
  });

  it('surfaces our error envelope as an APICallError', async () => {
    const err = await generateText({ model: switchyard().chatModel('nope/unknown'), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(err)).toBe(true);
    const e = err as APICallError;
    expect(e.statusCode).toBe(404);
    expect(e.responseHeaders?.['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(e.responseBody ?? '{}').error.code).toBe('NOT_FOUND');
  });
});

describe('Vercel AI SDK (@ai-sdk/openai) with bare model ids', () => {
  const openai = () => createOpenAI({ baseURL: `${s.url}/v1`, apiKey: org.key.key });

  it("openai('o4-mini') with a reasoning effort: the bare id is the catalog's openai/o4-mini, and the provider gets the effort", async () => {
    s.fake.reset();
    s.fake.setKnobs({ promptTokens: 1000, completionTokens: 500, text: TEXT });
    const r = await generateText({ model: openai()('o4-mini'), prompt: 'Think, then say hello', providerOptions: { openai: { reasoningEffort: 'low' } }, maxRetries: 0 });
    expect(r.text).toBe(TEXT);
    expect(r.response.modelId).toBe(REASONING);
    expect(s.fake.requests).toHaveLength(1);
    const sent = s.fake.requests[0].body as Record<string, unknown>;
    expect(sent.model).toBe('o4-mini');
    expect(sent.reasoning_effort ?? (sent.reasoning as { effort?: string } | undefined)?.effort).toBe('low');
  });

  it('a bare id that names no catalog model stays 404', async () => {
    const err = await generateText({ model: openai()('o9-nothing'), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect((err as APICallError).statusCode).toBe(404);
  });

  it('a reasoning effort for a model without reasoning is a warning and is not sent to the provider', async () => {
    s.fake.reset();
    s.fake.setKnobs({ text: TEXT });
    const client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
    const r = await client.responses.create({ model: PLAIN, input: 'hello', reasoning: { effort: 'high' } });
    expect(r.output_text).toBe(TEXT);
    const warnings = (r as unknown as { switchyard: { warnings?: string[] } }).switchyard.warnings ?? [];
    expect(warnings.some((w) => w.includes('reasoning'))).toBe(true);
    expect(s.fake.requests).toHaveLength(1);
    const sent = s.fake.requests[0].body as Record<string, unknown>;
    expect(sent.reasoning_effort).toBeUndefined();
    expect(sent.reasoning).toBeUndefined();
    expect((r.reasoning as { effort?: unknown } | null)?.effort ?? null).toBeNull();
  });
});

describe('LangChain JS (@langchain/openai)', () => {
  const chat = () => new ChatOpenAI({ model: STACK_MODELS.chat, apiKey: org.key.key, configuration: { baseURL: `${s.url}/v1` }, maxRetries: 0 });

  it('ChatOpenAI.invoke answers an AIMessage with usage metadata', async () => {
    const m = await chat().invoke([{ role: 'user', content: 'Say hello' }]);
    expect(m.content).toBe(TEXT);
    expect(m.usage_metadata).toMatchObject({ input_tokens: 1000, output_tokens: 500, total_tokens: 1500 });
    expect(m.response_metadata).toMatchObject({ finish_reason: 'stop' });
  });

  it('ChatOpenAI.stream yields the text in chunks and the usage at the end', async () => {
    let text = '';
    let usage: unknown;
    for await (const chunk of await chat().stream('Stream please')) {
      text += typeof chunk.content === 'string' ? chunk.content : '';
      if (chunk.usage_metadata) usage = chunk.usage_metadata;
    }
    expect(text).toBe(TEXT);
    expect(usage).toMatchObject({ input_tokens: 1000, output_tokens: 500 });
  });

  it('OpenAIEmbeddings embeds a query and documents', async () => {
    const e = new OpenAIEmbeddings({ model: STACK_MODELS.embedding, apiKey: org.key.key, configuration: { baseURL: `${s.url}/v1` }, maxRetries: 0 });
    const q = await e.embedQuery('alpha');
    const docs = await e.embedDocuments(['alpha', 'beta']);
    expect(docs).toHaveLength(2);
    expect(q.length).toBeGreaterThan(0);
    docs[0].forEach((v, i) => expect(v).toBeCloseTo(q[i], 6));
  });
});
