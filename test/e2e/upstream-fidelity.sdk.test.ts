/**
 * Upstream fidelity (issue 39), through the official openai SDK against the running stack: each call below reaches a
 * fake provider that judges it by the provider's own definitions (fakes/definitions/) and per-model rules
 * (fakes/provider-rules.ts) and answers the provider's 400 to what the real one refuses. Each call is one the real
 * provider accepts; what could not be sent as asked is a warning in our envelope, or our 400.
 */
import OpenAI from 'openai';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { money } from '../../shared/money';
import { leasesUnlessOff } from '../helpers/test-app';
import { createTestStack, STACK_MODELS, stackCatalog, type StackOrg, type TestStack } from '../helpers/test-stack';

let s: TestStack;
let org: StackOrg;
let client: OpenAI;

const PRICE = { prompt: 40, completion: 160 };
const CLAUDE = 'fidelity/claude';
const GEMINI_PRO = 'fidelity/gemini-pro';
const O4 = 'fidelity/o4-mini';
const GPT5 = 'fidelity/gpt-5';
const GPT5_PRICE = { prompt: 125, cached_prompt: '12.5', completion: 1000 };
/** OpenAI's priority and flex prices of gpt-5 (docs/decisions.md "Money"): what a call served at each tier is charged. */
const GPT5_TIERS = { priority: { price: { prompt: 250, cached_prompt: 25, completion: 2000 } }, flex: { price: { prompt: '62.5', cached_prompt: '6.25', completion: 500 } } };
const TEXT = ['temperature', 'top_p', 'top_k', 'tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'response_format', 'stop', 'max_tokens', 'stream'];

beforeAll(async () => {
  s = await createTestStack({
    env: { SYNC_WAIT_MS: '5000', ...leasesUnlessOff(16) },
    catalogOverrides: (url) => ({
      providers: { slow: { kind: 'anthropic', baseUrl: `${url}/anthropic/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 120_000 } },
      models: {
        // The stack's GPT-4.1 mini (chat completions upstream) with OpenAI's priority tier.
        [STACK_MODELS.chat]: (() => {
          const m = stackCatalog(url).models[STACK_MODELS.chat];
          return { ...m, endpoints: m.endpoints.map((e) => ({ ...e, tiers: { priority: { price: { prompt: 70, completion: 280 } } } })) };
        })(),
        [CLAUDE]: { displayName: 'Claude', type: 'chat', endpoints: [{ provider: 'slow', upstreamModel: 'claude-sonnet-4-5', price: PRICE, supports: TEXT, maxOutputTokens: 64000 }] },
        [GEMINI_PRO]: { displayName: 'Gemini Pro', type: 'chat', endpoints: [{ provider: 'gemini', upstreamModel: 'gemini-2.5-pro', price: PRICE, supports: TEXT, maxOutputTokens: 65536 }] },
        [O4]: {
          displayName: 'o4-mini',
          type: 'chat',
          endpoints: [{ provider: 'openai', upstreamModel: 'o4-mini', responsesApi: true, price: PRICE, supports: ['tools', 'tool_choice', 'reasoning', 'response_format', 'max_tokens', 'stream'], maxOutputTokens: 100000 }],
        },
        [GPT5]: {
          displayName: 'GPT-5',
          type: 'chat',
          endpoints: [{ provider: 'openai', upstreamModel: 'gpt-5', responsesApi: true, price: GPT5_PRICE, tiers: GPT5_TIERS, supports: ['tools', 'tool_choice', 'reasoning', 'response_format', 'max_tokens', 'stream'], maxOutputTokens: 128000 }],
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

/** The fake's encrypted reasoning names the item it was issued for (fakes/openai-responses.ts). */
const issuedFor = (encrypted: string | null | undefined): string => Buffer.from(encrypted ?? '', 'base64').toString('utf8');
const ENCRYPTED = { reasoning: { effort: 'low' as const, summary: 'auto' as const }, include: ['reasoning.encrypted_content' as const] };
type Item = Record<string, unknown>;
/** What a client gives back of an answer: its output items, as the next turn's input (the SDK types them apart). */
const givenBack = (output: unknown[]): ResponseInputItem[] => output as ResponseInputItem[];

describe('encrypted reasoning (item 7): streamed, and given back across stateless turns', () => {
  it('streams the reasoning item with its encrypted reasoning as OpenAI does, and keeps it in the stored response', async () => {
    const stream = client.responses.stream({ model: O4, input: 'think', ...ENCRYPTED });
    const done: Item[] = [];
    stream.on('response.output_item.done', (e) => done.push(e.item as unknown as Item));
    const final = await stream.finalResponse();
    const reasoning = done.find((i) => i.type === 'reasoning');
    expect(reasoning).toMatchObject({ summary: [{ type: 'summary_text', text: expect.stringMatching(/^Thinking about/) }], encrypted_content: expect.any(String) });
    expect(issuedFor(reasoning!.encrypted_content as string)).toMatch(/^fake-encrypted-reasoning:rs_/);
    expect(final.output.find((o) => o.type === 'reasoning')).toEqual(reasoning);
    expect((await client.responses.retrieve(final.id)).output.find((o) => o.type === 'reasoning')).toMatchObject({ encrypted_content: reasoning!.encrypted_content });
  });

  it('keeps no encrypted reasoning of a store: false response', async () => {
    const stream = client.responses.stream({ model: O4, input: 'think', store: false, ...ENCRYPTED });
    const final = await stream.finalResponse();
    expect(final.output.find((o) => o.type === 'reasoning')).toMatchObject({ encrypted_content: expect.any(String) });
    await s.settled(org.organizationId);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id: final.id } });
    expect(JSON.stringify(g.result)).not.toMatch(/encrypted_content|Thinking about/);
  });

  it('a stateless chain (store: false) gives the reasoning back to OpenAI, without our item ids, streamed or not', async () => {
    const ask = { model: O4, store: false, ...ENCRYPTED };
    const first = await client.responses.stream({ ...ask, input: [{ role: 'user', content: 'Weather in Paris?' }] }).finalResponse();
    const given = first.output.find((o) => o.type === 'reasoning')!;
    expect(given.id).toMatch(/^rs_/);
    const second = await client.responses.create({ ...ask, input: [{ role: 'user', content: 'Weather in Paris?' }, ...givenBack(first.output), { role: 'user', content: 'And tomorrow?' }] });
    expect(second.output_text).toBe('Echo: And tomorrow?');
    expect(warningsOf(second)).toBe('');
    const sent = sentTo('/responses').input as Item[];
    expect(sent.map((i) => i.type ?? i.role)).toEqual(['message', 'reasoning', 'message', 'message']);
    expect(sent[1]).toEqual({ type: 'reasoning', summary: given.summary, encrypted_content: given.encrypted_content });
    // And on: the second answer's reasoning goes back in the third turn.
    const third = await client.responses.create({ ...ask, stream: true, input: [...givenBack(sent), ...givenBack(second.output), { role: 'user', content: 'Thanks.' }] });
    for await (const _ of third);
    expect((sentTo('/responses').input as Item[]).filter((i) => i.type === 'reasoning')).toHaveLength(2);
  });

  it('carries encrypted reasoning on through previous_response_id', async () => {
    const first = await client.responses.create({ model: O4, input: 'Weather in Paris?', ...ENCRYPTED });
    const encrypted = first.output.find((o) => o.type === 'reasoning')?.encrypted_content;
    await client.responses.create({ model: O4, input: 'And tomorrow?', previous_response_id: first.id, reasoning: { effort: 'low' } });
    expect((sentTo('/responses').input as Item[]).find((i) => i.type === 'reasoning')).toEqual({ type: 'reasoning', summary: expect.any(Array), encrypted_content: encrypted });
  });

  it('leaves earlier reasoning out of a call to an API without a place for it, with a warning', async () => {
    const r = await client.responses.create({
      model: CLAUDE,
      input: [
        { role: 'user', content: 'Weather?' },
        { type: 'reasoning', id: 'rs_abc_0', summary: [{ type: 'summary_text', text: 'Checked.' }], encrypted_content: 'ZW5j' },
        { role: 'assistant', content: 'Sunny.' },
        { role: 'user', content: 'Tomorrow?' },
      ],
    });
    expect(r.output_text).toBe('Echo: Tomorrow?');
    expect(JSON.stringify(sentTo('/messages'))).not.toMatch(/Checked|ZW5j/);
    expect(warningsOf(r)).toMatch(/earlier reasoning \(1 input item\) was left out of the call to claude-sonnet-4-5: only an endpoint that speaks the Responses API takes it/);
  });
});

describe('a streamed Responses call through the SDK keeps what only that API carries (item 7)', () => {
  it('a plain Responses call says the tier that served it, through an endpoint of either OpenAI API', async () => {
    const r = await client.responses.create({ model: GPT5, input: 'hi', max_output_tokens: 100, service_tier: 'priority' });
    expect(sentTo('/responses')).toMatchObject({ service_tier: 'priority' });
    expect(r.service_tier).toBe('priority');
    const viaChat = await client.responses.create({ model: 'openai/gpt-4.1-mini', input: 'hi', service_tier: 'priority' });
    expect(sentTo('/chat/completions')).toMatchObject({ service_tier: 'priority' });
    expect(viaChat.service_tier).toBe('priority');
    expect((await client.responses.create({ model: CLAUDE, input: 'hi' })).service_tier).toBeNull();
  });

  /** gpt-5's flex price (the tier these calls ask for): 1,000 input tokens of 1,200 cached, 600 output of which 450 reasoning. */
  const USAGE = { promptTokens: 1200, cachedTokens: 1000, completionTokens: 600, reasoningTokens: 450 };
  const FLEX = GPT5_TIERS.flex.price;
  const expectedCost = money(200).times(FLEX.prompt).plus(money(1000).times(FLEX.cached_prompt)).plus(money(600).times(FLEX.completion)).dividedBy(1_000_000);
  const body = { model: GPT5, input: 'Plan a trip.', max_output_tokens: 4000, reasoning: { effort: 'high' as const, summary: 'detailed' as const }, text: { verbosity: 'low' as const }, service_tier: 'flex' as const };

  /** The answer's usage, cost and record: exactly the provider's tokens at the endpoint's prices, cached ones at theirs. */
  async function expectExact(id: string, usage: unknown) {
    expect(usage).toMatchObject({ input_tokens: 1200, input_tokens_details: { cached_tokens: 1000 }, output_tokens: 600, output_tokens_details: { reasoning_tokens: 450 }, total_tokens: 1800 });
    expect(money((usage as { cost_rub: number }).cost_rub).equals(expectedCost)).toBe(true); // 0.31875 at flex (0.6375 standard), within the 6 places JSON shows
    await s.settled(org.organizationId);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id } });
    expect(money(g.clientCost).toFixed(10)).toBe(expectedCost.toFixed(10));
    expect(g.usage).toMatchObject({ inputTokens: 1200, cachedTokens: 1000, outputTokens: 600, reasoningTokens: 450 });
    const charged = await s.t.db.ledgerEntry.findMany({ where: { generationId: id, kind: 'charge' } });
    expect(charged.reduce((sum, e) => sum.plus(money(e.amount).abs()), money(0)).toFixed(10)).toBe(expectedCost.toFixed(10));
  }

  it('responses.stream: service_tier, verbosity and the reasoning summary reach OpenAI; the summary streams as OpenAI streams it; usage and cost exact', async () => {
    s.fake.setKnobs({ text: 'A short plan.', ...USAGE });
    const stream = client.responses.stream(body);
    const types: string[] = [];
    let summary = '';
    stream.on('event', (e) => types.push(e.type));
    stream.on('response.reasoning_summary_text.delta', (e) => (summary += e.delta));
    const final = await stream.finalResponse();
    expect(sentTo('/responses')).toMatchObject({ model: 'gpt-5', stream: true, store: false, service_tier: 'flex', text: { verbosity: 'low' }, reasoning: { effort: 'high', summary: 'detailed' } });
    expect(warningsOf(final)).toBe('');
    expect(summary).toBe('Thinking about: Plan a trip.');
    const reasoningEvents = types.filter((t) => t.startsWith('response.reasoning_summary'));
    expect(reasoningEvents).toEqual(['response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta', 'response.reasoning_summary_text.done', 'response.reasoning_summary_part.done']);
    expect(types.indexOf('response.reasoning_summary_part.done')).toBeLessThan(types.indexOf('response.output_text.delta'));
    expect(final.output.map((o) => o.type)).toEqual(['reasoning', 'message']);
    expect(final.output[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: summary }] });
    // The tier OpenAI says served it, as OpenAI's own answer says it; also when read back.
    expect(final).toMatchObject({ output_text: 'A short plan.', text: { verbosity: 'low' }, reasoning: { effort: 'high', summary: 'detailed' }, service_tier: 'flex' });
    expect((await client.responses.retrieve(final.id)).service_tier).toBe('flex');
    await expectExact(final.id, final.usage);
  });

  it('create({ stream: true }): the same events and the same exact usage on response.completed', async () => {
    s.fake.setKnobs({ text: 'A short plan.', ...USAGE });
    const stream = await client.responses.create({ ...body, stream: true });
    let completed: OpenAI.Responses.Response | undefined;
    const summaries: string[] = [];
    for await (const e of stream) {
      if (e.type === 'response.reasoning_summary_text.done') summaries.push(e.text);
      if (e.type === 'response.completed') completed = e.response;
    }
    expect(sentTo('/responses')).toMatchObject({ stream: true, service_tier: 'flex', text: { verbosity: 'low' } });
    expect(summaries).toEqual(['Thinking about: Plan a trip.']);
    expect(completed!.service_tier).toBe('flex');
    await expectExact(completed!.id, completed!.usage);
  });
});
