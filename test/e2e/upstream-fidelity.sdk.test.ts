/**
 * Upstream fidelity (issue 39), through the official openai SDK against the running stack: each call below reaches a
 * fake provider that judges it by the provider's own definitions (fakes/definitions/) and per-model rules
 * (fakes/provider-rules.ts) and answers the provider's 400 to what the real one refuses. Each call is one the real
 * provider accepts; what could not be sent as asked is a warning in our envelope, or our 400.
 */
import OpenAI from 'openai';
import { money } from '../../shared/money';
import { leasesUnlessOff } from '../helpers/test-app';
import { createTestStack, type StackOrg, type TestStack } from '../helpers/test-stack';

let s: TestStack;
let org: StackOrg;
let client: OpenAI;

const PRICE = { prompt: 40, completion: 160 };
const CLAUDE = 'fidelity/claude';
const GEMINI_PRO = 'fidelity/gemini-pro';
const O4 = 'fidelity/o4-mini';
const TEXT = ['temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'response_format', 'stop', 'max_tokens', 'stream'];

beforeAll(async () => {
  s = await createTestStack({
    env: { SYNC_WAIT_MS: '5000', ...leasesUnlessOff(16) },
    catalogOverrides: (url) => ({
      providers: { slow: { kind: 'anthropic', baseUrl: `${url}/anthropic/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 120_000 } },
      models: {
        [CLAUDE]: { displayName: 'Claude', type: 'chat', endpoints: [{ provider: 'slow', upstreamModel: 'claude-sonnet-4-5', price: PRICE, supports: TEXT, maxOutputTokens: 64000 }] },
        [GEMINI_PRO]: { displayName: 'Gemini Pro', type: 'chat', endpoints: [{ provider: 'gemini', upstreamModel: 'gemini-2.5-pro', price: PRICE, supports: TEXT, maxOutputTokens: 65536 }] },
        [O4]: {
          displayName: 'o4-mini',
          type: 'chat',
          endpoints: [{ provider: 'openai', upstreamModel: 'o4-mini', responsesApi: true, price: PRICE, supports: ['tools', 'tool_choice', 'reasoning', 'response_format', 'max_tokens', 'stream'], maxOutputTokens: 100000 }],
        },
      },
    }),
  });
  org = await s.seed({ balance: '100' });
  client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

type Body = Record<string, unknown>;
const sentTo = (suffix: string): Body => (s.fake.requests.filter((r) => r.path.endsWith(suffix)).at(-1)?.body ?? {}) as Body;
const warningsOf = (reply: unknown): string => ((reply as { switchyard?: { warnings?: string[] } }).switchyard?.warnings ?? []).join(' | ');
const tool = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

describe('Anthropic extended thinking (item 1)', () => {
  it('leaves out the sampling parameters thinking forbids, with warnings, instead of a 400 from Anthropic', async () => {
    const c = await client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'medium', temperature: 0.2, top_p: 0.5, top_k: 40 } as never);
    expect(c.choices[0]?.message.content).toBe('Echo: hi');
    const sent = sentTo('/messages');
    expect(sent.thinking).toMatchObject({ type: 'enabled' });
    for (const p of ['temperature', 'top_p', 'top_k']) expect(sent).not.toHaveProperty(p);
    expect(warningsOf(c)).toMatch(/temperature 0.2 was left out.*top_p 0.5 was left out.*top_k 40 was left out/);
  });

  it('answers a forced tool choice without thinking', async () => {
    s.fake.setKnobs({ toolCall: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    const c = await client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: 'weather?' }], tools: [tool], tool_choice: 'required', reasoning_effort: 'high' });
    expect(c.choices[0]?.finish_reason).toBe('tool_calls');
    expect(sentTo('/messages')).not.toHaveProperty('thinking');
    expect(warningsOf(c)).toMatch(/reasoning was left out .*forced tool choice/);
  });
});

describe('empty conversations (item 2)', () => {
  it('a request of system messages only is our 400 for Anthropic and Gemini, nothing sent; OpenAI takes it', async () => {
    for (const model of [CLAUDE, GEMINI_PRO]) {
      const err = await client.chat.completions.create({ model, messages: [{ role: 'system', content: 'Say hi.' }] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(String((err as Error).message)).toMatch(/at least one user or (assistant|model) message/);
    }
    expect(s.fake.requests.filter((r) => !r.path.includes('/_fake'))).toHaveLength(0);
    const ok = await client.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'system', content: 'Say hi.' }] });
    expect(ok.choices[0]?.message.content).toBeTruthy();
  });
});

describe('Gemini schemas and thinking budgets (items 3 and 4)', () => {
  it("sends OpenAI strict mode's nullable enum as Gemini's string enum, naming what Gemini cannot enforce", async () => {
    const schema = { type: 'object', properties: { unit: { type: ['string', 'null'], enum: ['c', 'f', null] } }, required: ['unit'], additionalProperties: false };
    const c = await client.chat.completions.create({ model: GEMINI_PRO, messages: [{ role: 'user', content: 'unit?' }], response_format: { type: 'json_schema', json_schema: { name: 'u', schema, strict: true } } });
    expect(c.choices[0]?.message.content).toBeTruthy();
    const cfg = sentTo(':generateContent').generationConfig as Body;
    expect(cfg.responseSchema).toEqual({ type: 'OBJECT', properties: { unit: { type: 'STRING', nullable: true, enum: ['c', 'f'] } }, required: ['unit'] });
    expect(warningsOf(c)).toMatch(/additionalProperties .* left out .*strict is not enforced/);
  });

  it("keeps reasoning within Gemini 2.5 Pro's budgets: none is its smallest budget, with a warning", async () => {
    const c = await client.chat.completions.create({ model: GEMINI_PRO, messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'none' } as never);
    expect((sentTo(':generateContent').generationConfig as Body).thinkingConfig).toEqual({ thinkingBudget: 128 });
    expect(warningsOf(c)).toMatch(/cannot turn thinking off/);
    await client.chat.completions.create({ model: GEMINI_PRO, messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'xhigh' } as never);
    expect((sentTo(':generateContent').generationConfig as Body).thinkingConfig).toEqual({ thinkingBudget: 32768 });
  });
});

describe('meaning kept (item 5) and limits (item 6)', () => {
  it('keeps safety_identifier apart from user', async () => {
    await client.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }], safety_identifier: 'hash-7' });
    expect(sentTo('/chat/completions')).toMatchObject({ safety_identifier: 'hash-7' });
    expect(sentTo('/chat/completions')).not.toHaveProperty('user');
  });

  it('a mid-conversation system message moved to the system prompt is said in a warning', async () => {
    const c = await client.chat.completions.create({
      model: CLAUDE,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'system', content: 'Now answer in French.' },
        { role: 'user', content: 'and now?' },
      ],
    });
    expect(sentTo('/messages').system).toBe('Now answer in French.');
    expect(warningsOf(c)).toMatch(/system message in the middle of the conversation was moved/);
  });

  it("an Anthropic call without a limit asks for no more than fits the provider's timeout, unless it streams", async () => {
    await client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: 'hi' }] });
    expect(sentTo('/messages').max_tokens).toBe(4266); // 120 s at 128,000 tokens an hour, not the endpoint's 64,000
    const stream = await client.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: 'hi' }], stream: true });
    for await (const _ of stream);
    expect(sentTo('/messages').max_tokens).toBe(64000);
  });
});

describe('Responses calls go upstream as Responses calls where the endpoint speaks that API (item 7)', () => {
  it('a Responses call keeps its reasoning summary, and is charged exactly its usage', async () => {
    s.fake.setKnobs({ text: 'Hello from the fake provider', promptTokens: 1000, completionTokens: 500, reasoningTokens: 200 });
    const r = await client.responses.create({ model: O4, input: 'think', reasoning: { effort: 'minimal', summary: 'auto' } });
    const sent = sentTo('/responses');
    expect(sent).toMatchObject({ model: 'o4-mini', reasoning: { effort: 'low', summary: 'auto' }, store: false });
    expect(r.output.find((o) => o.type === 'reasoning')).toMatchObject({ summary: [{ type: 'summary_text', text: expect.stringMatching(/^Thinking about/) }] });
    expect(r.output_text).toBe('Hello from the fake provider');
    expect(r.usage).toMatchObject({ input_tokens: 1000, output_tokens: 500, output_tokens_details: { reasoning_tokens: 200 } });
    const expected = money(1000).times(40).plus(money(500).times(160)).dividedBy(1_000_000);
    expect(money((r.usage as unknown as { cost_rub: number }).cost_rub).equals(expected)).toBe(true);
    expect(warningsOf(r)).toMatch(/"minimal" of parameter 'reasoning.effort' is not offered by o4-mini/);
  });

  it('streams through the Responses API with its reasoning summary and usage', async () => {
    s.fake.setKnobs({ text: 'streamed answer', promptTokens: 100, completionTokens: 50 });
    const stream = await client.responses.create({ model: O4, input: 'think', reasoning: { effort: 'high', summary: 'auto' }, stream: true });
    const types: string[] = [];
    let usage: Record<string, unknown> | undefined;
    let text = '';
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') usage = ev.response.usage as unknown as Record<string, unknown>;
    }
    expect(s.fake.requests.at(-1)?.path).toBe('/openai/v1/responses');
    expect(types).toContain('response.reasoning_summary_text.delta');
    expect(text).toBe('streamed answer');
    expect(usage).toMatchObject({ input_tokens: 100, output_tokens: 50, cost_rub: expect.any(Number) });
  });

  it('a chat completion to the same endpoint stays a chat completion', async () => {
    await client.chat.completions.create({ model: O4, messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'low' });
    expect(s.fake.requests.at(-1)?.path).toBe('/openai/v1/chat/completions');
    expect(sentTo('/chat/completions')).toMatchObject({ reasoning_effort: 'low' });
  });
});
