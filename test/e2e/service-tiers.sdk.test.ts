/**
 * Processing tiers (`service_tier`: docs/decisions.md "Money" and "Routing"), through the official openai SDK against
 * the running stack: a tier goes upstream only to an endpoint whose catalog prices it; the reservation is bounded at
 * the price of the tier asked for; the charge is at the price of the tier the provider says served the call, once,
 * exactly, as the reply, the record, the ledger and the history show it.
 */
import OpenAI from 'openai';
import request from 'supertest';
import { money, ZERO, type Decimal } from '../../shared/money';
import { tokenCost } from '../../shared/billing/pricing';
import { leasesUnlessOff } from '../helpers/test-app';
import { createTestStack, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';

let s: TestStack;
let org: StackOrg;
let client: OpenAI;

/** GPT-4.1 mini: first in the catalog an endpoint without tiers (as an Azure deployment), then OpenAI's own with priority. */
const MINI = 'tiers/gpt-4.1-mini';
/** o4-mini on OpenAI's Responses API, with priority and flex. */
const O4 = 'tiers/o4-mini';
const MINI_PRICE = { prompt: '40', cached_prompt: '10', completion: '160' };
const MINI_PRIORITY = { prompt: '70', cached_prompt: '17.5', completion: '280' };
const EU_PRICE = { prompt: '44', cached_prompt: '11', completion: '176' };
const O4_PRICE = { prompt: '110', cached_prompt: '27.5', completion: '440' };
const O4_FLEX = { prompt: '55', cached_prompt: '13.75', completion: '220' };
const O4_PRIORITY = { prompt: '200', cached_prompt: '50', completion: '800' };
const TEXT = ['temperature', 'tools', 'tool_choice', 'response_format', 'max_tokens', 'stream'];

beforeAll(async () => {
  s = await createTestStack({
    env: { SYNC_WAIT_MS: '5000', ...leasesUnlessOff(16) },
    catalogOverrides: (url) => ({
      providers: { 'openai-eu': { kind: 'openai', baseUrl: `${url}/openai/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 10_000 } },
      models: {
        [MINI]: {
          displayName: 'GPT-4.1 mini',
          type: 'chat',
          endpoints: [
            { provider: 'openai-eu', upstreamModel: 'gpt-4.1-mini', price: EU_PRICE, supports: TEXT, maxOutputTokens: 32768 },
            { provider: 'openai', upstreamModel: 'gpt-4.1-mini', price: MINI_PRICE, tiers: { priority: { price: MINI_PRIORITY } }, supports: TEXT, maxOutputTokens: 32768 },
          ],
        },
        [O4]: {
          displayName: 'o4-mini',
          type: 'chat',
          endpoints: [
            {
              provider: 'openai',
              upstreamModel: 'o4-mini',
              responsesApi: true,
              price: O4_PRICE,
              tiers: { priority: { price: O4_PRIORITY }, flex: { price: O4_FLEX } },
              supports: ['tools', 'tool_choice', 'reasoning', 'response_format', 'max_tokens', 'stream'],
              maxOutputTokens: 100000,
            },
          ],
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
const costOf = (usage: unknown): number => (usage as { cost_rub: number }).cost_rub;

/** 1,200 input tokens of which 1,000 cached, 600 output: the usage every answer below reports. */
const USAGE = { promptTokens: 1200, cachedTokens: 1000, completionTokens: 600 };
const priced = (price: Record<string, string>): Decimal => tokenCost(price, { inputTokens: 1200, cachedTokens: 1000, outputTokens: 600 });

/** The generation charged `expected` once (one charge entry), recorded it, and its history says the tier and the cost. */
async function expectCharged(id: string, expected: Decimal, tier: string | null) {
  await s.settled(org.organizationId);
  const g = await s.t.db.generation.findFirstOrThrow({ where: { id } });
  expect(money(g.clientCost).toFixed(10)).toBe(expected.toFixed(10));
  const charges = await s.t.db.ledgerEntry.findMany({ where: { generationId: id, kind: 'charge' } });
  expect(charges).toHaveLength(1);
  expect(charges.reduce((sum, e) => sum.plus(money(e.amount).abs()), ZERO).toFixed(10)).toBe(expected.toFixed(10));
  const h = await request(s.app).get(`/v1/history/generations/${id}`).set(org.auth);
  expect(h.status).toBe(200);
  expect(h.body).toMatchObject({ serviceTier: tier, clientCost: expected.toFixed(6) });
}

describe('a tier the endpoint sells', () => {
  it('priority goes to the endpoint that sells it (ahead of the catalog order) and is charged the priority price', async () => {
    s.fake.setKnobs(USAGE);
    const c = await client.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: 'hi' }], service_tier: 'priority' });
    expect(s.fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
    expect(sentTo('/chat/completions')).toMatchObject({ model: 'gpt-4.1-mini', service_tier: 'priority' });
    expect(c.service_tier).toBe('priority');
    expect(warningsOf(c)).toBe('');
    const expected = priced(MINI_PRIORITY); // 0.1995: 1.75 times the standard 0.114
    expect(expected.toFixed()).toBe('0.1995');
    expect(costOf(c.usage)).toBe(0.1995);
    expect((await request(s.app).get(`/v1/history/generations/${c.id}`).set(org.auth)).body.finalEndpointSlug).toBe(`${MINI}:openai`);
    await expectCharged(c.id, expected, 'priority');
  });

  it('priority answered at the standard tier (OpenAI had no priority capacity) is charged the standard price', async () => {
    s.fake.setKnobs({ ...USAGE, serviceTier: 'default' });
    const c = await client.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: 'hi' }], service_tier: 'priority' });
    expect(sentTo('/chat/completions')).toMatchObject({ service_tier: 'priority' });
    expect(c.service_tier).toBe('default');
    expect(costOf(c.usage)).toBe(0.114);
    await expectCharged(c.id, priced(MINI_PRICE), 'default');
  });

  it('a streamed priority chat completion says its tier and the priority cost on its last chunks', async () => {
    s.fake.setKnobs(USAGE);
    const stream = client.chat.completions.stream({ model: MINI, messages: [{ role: 'user', content: 'hi' }], service_tier: 'priority', stream_options: { include_usage: true } });
    const final = await stream.finalChatCompletion();
    expect(sentTo('/chat/completions')).toMatchObject({ stream: true, service_tier: 'priority' });
    expect(final.service_tier).toBe('priority');
    expect(costOf(final.usage)).toBe(0.1995);
    await expectCharged(final.id, priced(MINI_PRIORITY), 'priority');
  });

  it('flex on a Responses API call is charged the flex price, half the standard', async () => {
    s.fake.setKnobs(USAGE);
    const r = await client.responses.create({ model: O4, input: 'hi', service_tier: 'flex' });
    expect(sentTo('/responses')).toMatchObject({ model: 'o4-mini', service_tier: 'flex' });
    expect(r.service_tier).toBe('flex');
    const expected = priced(O4_FLEX);
    expect(expected.times(2).toFixed(10)).toBe(priced(O4_PRICE).toFixed(10));
    expect(costOf(r.usage)).toBe(Number(expected.toFixed(6)));
    expect((await client.responses.retrieve(r.id)).service_tier).toBe('flex');
    await expectCharged(r.id, expected, 'flex');
  });

  it('a priority stream cut before the provider said its tier is charged what it produced at the priority price it was sent at', async () => {
    s.fake.setKnobs({ failMidStream: true, streamChunks: 8 });
    const stream = await client.responses.create({ model: O4, input: 'hi', service_tier: 'priority', stream: true });
    let id = '';
    const types: string[] = [];
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.created') id = e.response.id;
    }
    expect(types).toContain('response.output_text.delta');
    expect(types.at(-1)).toBe('response.failed');
    expect(sentTo('/responses')).toMatchObject({ service_tier: 'priority' });
    const g = await waitUntil(async () => {
      const row = await s.t.db.generation.findFirst({ where: { id } });
      return row?.status === 'failed' ? row : undefined;
    });
    const usage = g.usage as { inputTokens: number; outputTokens: number };
    expect(usage.outputTokens).toBeGreaterThan(0);
    await expectCharged(id, tokenCost(O4_PRIORITY, usage), null);
  });
});

describe('a tier the endpoint does not sell', () => {
  it('is sent without it, with a warning in our envelope, and charged the standard price', async () => {
    s.fake.setKnobs(USAGE);
    const c = await client.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: 'hi' }], service_tier: 'priority', provider: { only: ['openai-eu'] } } as never);
    expect(sentTo('/chat/completions')).not.toHaveProperty('service_tier');
    expect(warningsOf(c)).toBe(`Parameter 'service_tier' is not supported by ${MINI} via openai-eu and was ignored`);
    expect(c.service_tier).toBe('default');
    await expectCharged(c.id, priced(EU_PRICE), 'default');
  });

  it('flex, which no endpoint of the model sells, goes to neither: the catalog order, standard price, a warning', async () => {
    s.fake.setKnobs(USAGE);
    const r = await client.responses.create({ model: MINI, input: 'hi', service_tier: 'flex' });
    expect(sentTo('/chat/completions')).not.toHaveProperty('service_tier');
    expect(warningsOf(r)).toMatch(/Parameter 'service_tier' is not supported by tiers\/gpt-4.1-mini via openai-eu and was ignored/);
    await expectCharged(r.id, priced(EU_PRICE), 'default');
  });

  it('is a fallback: when the endpoint that sells priority fails, the next answers at the standard price, said so', async () => {
    s.fake.setKnobs({ ...USAGE, status: 500, failTimes: 1 });
    const c = await client.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: 'hi' }], service_tier: 'priority' });
    const calls = s.fake.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => (r.body as Body).service_tier);
    expect(calls).toEqual(['priority', undefined]);
    expect(warningsOf(c)).toMatch(/service_tier' is not supported by .* via openai-eu/);
    await expectCharged(c.id, priced(EU_PRICE), 'default');
  });

  it('with provider.require_parameters, only an endpoint selling the tier may answer', async () => {
    const err = await client.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: 'hi' }], service_tier: 'flex', provider: { require_parameters: true } } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(String((err as Error).message)).toMatch(/service_tier/);
    expect(s.fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(0);
  });
});

describe('the reservation', () => {
  it('is bounded at the price of the tier asked for: a priority call fits fewer output tokens in the same balance', async () => {
    const lowered = async (tier?: 'priority'): Promise<number> => {
      const poor = await s.seed({ balance: '0.01' });
      const c = new OpenAI({ apiKey: poor.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
      s.fake.setKnobs({ completionTokens: 10 });
      const r = await c.chat.completions.create({ model: MINI, messages: [{ role: 'user', content: 'a' }], max_tokens: 4096, ...(tier && { service_tier: tier }) });
      const m = /max_output_tokens was lowered to (\d+)/.exec(warningsOf(r));
      expect(m).not.toBeNull();
      expect(sentTo('/chat/completions').max_completion_tokens).toBe(Number(m![1]));
      return Number(m![1]);
    };
    // 0.01 RUB at 280 RUB a million output tokens (priority) is at most 35 of them; at the dearest standard price
    // (176 at openai-eu), 56.
    const priority = await lowered('priority');
    const standard = await lowered();
    expect(priority).toBeLessThanOrEqual(35);
    expect(standard).toBeGreaterThan(35);
    expect(standard).toBeLessThanOrEqual(56);
  });
});
