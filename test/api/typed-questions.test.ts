import request from 'supertest';
import { money } from '../../shared/money';
import { startFakeProvider, type FakeProvider } from '../../fakes/fake-provider';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { orgMoney as heldMoney } from '../helpers/fixtures';

const WITH_LOGPROBS = ['temperature', 'max_tokens', 'logprobs', 'top_logprobs'];
const WITHOUT_LOGPROBS = ['temperature', 'max_tokens'];
/** An endpoint's `supports` exactly as decisions.md section 1 spells it: `logprobs` covers `top_logprobs`. */
const CONTRACT_SUPPORTS = ['temperature', 'top_p', 'tools', 'reasoning', 'logprobs', 'stream'];
const PRICE = { prompt: 40, completion: 160 };
const endpoint = (provider: string, supports: string[], price: Record<string, number> = PRICE) => ({ provider, upstreamModel: 'gpt-4.1-mini', price, supports, maxOutputTokens: 4096 });

/** The log-probabilities the fake returns at the answer position (one record per position). */
const TOP = { Y: -0.3, N: -1.5, A: -0.9, B: -0.2, C: -2.2, '1': -2, '2': -1.1, '3': -0.4, ' the': -5 };

let s: TestStack;
let org: StackOrg;
/** A second upstream that never returns log-probabilities, although the catalog says it does. */
let mute: FakeProvider;

beforeAll(async () => {
  mute = await startFakeProvider({ knobs: { noLogprobs: true } });
  s = await createTestStack({
    env: { SYNC_WAIT_MS: '5000' },
    catalogOverrides: (url) => ({
      providers: {
        primary: { kind: 'openai', baseUrl: `${url}/openai/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 2000 },
        mute: { kind: 'openai', baseUrl: `${mute.url}/openai/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 2000 },
      },
      models: {
        // The catalog claims log-probabilities for `mute`: only the reply shows it has none.
        'acme/judge': { displayName: 'Judge', type: 'chat', endpoints: [endpoint('mute', WITH_LOGPROBS), endpoint('primary', WITH_LOGPROBS)] },
        // `mute` declares no log-probabilities here: routing drops it before any call.
        'acme/mixed': { displayName: 'Mixed', type: 'chat', endpoints: [endpoint('mute', WITHOUT_LOGPROBS, { prompt: 1, completion: 1 }), endpoint('primary', WITH_LOGPROBS)] },
        'acme/contract': { displayName: 'Contract', type: 'chat', endpoints: [endpoint('primary', CONTRACT_SUPPORTS)] },
        'acme/blind': { displayName: 'Blind', type: 'chat', endpoints: [endpoint('mute', WITHOUT_LOGPROBS), endpoint('primary', WITHOUT_LOGPROBS)] },
      },
    }),
  });
  org = await s.seed({ balance: '1000' });
});
afterAll(async () => {
  await s.close();
  await mute.close();
});
beforeEach(() => {
  s.fake.reset();
  mute.reset();
  mute.setKnobs({ noLogprobs: true });
  s.fake.setKnobs({ logprobs: [TOP], promptTokens: 100, completionTokens: 1 });
});

const QUESTIONS = {
  polite: { type: 'noul', instructions: 'Is the message polite?' },
  topic: { type: 'choice', instructions: 'What is the message about?', criteria: { billing: 'money matters', shipping: 'deliveries', other: 'anything else' } },
  warmth: { type: 'score', instructions: 'How warm is the tone?', criteria: ['cold', 'neutral', 'warm'] },
};
const post = (body: object, auth = org.auth) => request(s.app).post('/v1/systemone').set(auth).send(body);
const ask = (model: string, extra: object = {}) => post({ state: { message: 'Thanks a lot, where is my parcel?' }, model, questions: QUESTIONS, ...extra });

/** softmax over the given tokens of TOP. */
function expected(tokens: string[]): number[] {
  const w = tokens.map((t) => Math.exp(TOP[t as keyof typeof TOP]));
  const z = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / z);
}
const close = (actual: number, want: number) => expect(Math.abs(actual - want)).toBeLessThan(1e-9);

async function orgMoney(id = org.organizationId) {
  await s.settled(id);
  return heldMoney(s.t.db, id);
}

describe('answers from log-probabilities', () => {
  it('answers every question type from the returned top log-probabilities, to 1e-9', async () => {
    const res = await ask('acme/mixed');
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('gpt-4.1-mini'); // the version the provider reports
    expect(res.body.id).toMatch(/^gen/);
    const { polite, topic, warmth } = res.body.answers;

    const [yes] = expected(['Y', 'N']);
    expect(polite.type).toBe('noul');
    close(polite.noul, yes);

    const [billing, shipping, other] = expected(['A', 'B', 'C']);
    expect(topic).toMatchObject({ type: 'choice', choice: 'shipping' });
    close(topic.confidence, shipping);
    close(topic.probabilities.billing, billing);
    close(topic.probabilities.shipping, shipping);
    close(topic.probabilities.other, other);

    const [cold, neutral, warm] = expected(['1', '2', '3']);
    expect(warmth).toMatchObject({ type: 'score', label: 'warm' });
    close(warmth.probabilities.cold, cold);
    close(warmth.probabilities.neutral, neutral);
    close(warmth.probabilities.warm, warm);
    close(warmth.score, neutral * 0.5 + warm);
  });

  it('sends one constrained call per question: one token, temperature 0, 20 alternatives', async () => {
    await ask('acme/mixed');
    expect(mute.requests).toHaveLength(0); // dropped by routing: no logprobs in its `supports`
    expect(s.fake.requests).toHaveLength(3);
    for (const r of s.fake.requests) expect(r.body).toMatchObject({ max_completion_tokens: 1, temperature: 0, logprobs: true, top_logprobs: 20 });
    const prompts = s.fake.requests.map((r) => JSON.stringify(r.body));
    expect(prompts.some((p) => p.includes('exactly one of Y or N'))).toBe(true);
    expect(prompts.some((p) => p.includes('exactly one of A, B or C'))).toBe(true);
    expect(prompts.some((p) => p.includes('exactly one of 1, 2 or 3'))).toBe(true);
    expect(prompts.every((p) => p.includes('where is my parcel?'))).toBe(true);
  });

  it('serves an endpoint written to the contract vocabulary (logprobs alone covers top_logprobs)', async () => {
    const res = await ask('acme/contract');
    expect(res.status).toBe(200);
    close(res.body.answers.polite.noul, expected(['Y', 'N'])[0]);
    expect(s.fake.requests).toHaveLength(3);
    for (const r of s.fake.requests) expect(r.body).toMatchObject({ logprobs: true, top_logprobs: 20, temperature: 0 });
  });

  it('keeps top_logprobs of a chat completion on an endpoint that lists only logprobs', async () => {
    const res = await request(s.app)
      .post('/v1/chat/completions')
      .set(org.auth)
      .send({ model: 'acme/contract', messages: [{ role: 'user', content: 'hi' }], logprobs: true, top_logprobs: 3, tool_choice: 'none', tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] });
    expect(res.status).toBe(200);
    expect(res.body.switchyard?.warnings ?? []).toEqual([]);
    expect(s.fake.requests[0].body).toMatchObject({ logprobs: true, top_logprobs: 3, tool_choice: 'none' });
  });

  it('skips a provider that returns no log-probabilities: the next endpoint answers', async () => {
    const res = await ask('acme/judge');
    expect(res.status).toBe(200);
    expect(mute.requests).toHaveLength(3);
    expect(s.fake.requests).toHaveLength(3);
    close(res.body.answers.polite.noul, expected(['Y', 'N'])[0]);
    await s.settled(org.organizationId);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id: res.body.id } });
    expect(g).toMatchObject({ status: 'completed', provider: 'primary', finalEndpointSlug: 'acme/judge:primary', attemptsCount: 6 });
    // The failed calls are recorded as every generation kind records them, each with its question.
    const routing = g.routing as { attempts: Array<{ question: string; provider: string; reason: string }> };
    expect(routing.attempts.map((a) => `${a.question}:${a.provider}:${a.reason}`).sort()).toEqual(['polite', 'topic', 'warmth'].map((q) => `${q}:mute:malformed_reply`));
  });

  it('counts a reply without any allowed token as a failed attempt', async () => {
    s.fake.setKnobs({ logprobs: [{ Maybe: -0.1, ' the': -2 }] });
    const res = await ask('acme/mixed');
    expect(res.status).toBe(502);
    expect(res.body.error.metadata.reason).toBe('all_providers_failed');
    expect(res.body.error.metadata.attempts).toHaveLength(3);
    expect(res.body.error.metadata.attempts[0]).toMatchObject({ provider: 'primary', reason: 'malformed_reply' });
  });

  it('answers 502 all_providers_failed listing every attempt when all fail, and charges nothing', async () => {
    s.fake.setKnobs({ status: 500 });
    const before = await orgMoney();
    const res = await ask('acme/judge');
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('BAD_GATEWAY');
    expect(res.body.error.metadata.reason).toBe('all_providers_failed');
    const attempts: Array<{ provider: string; reason: string; question: string }> = res.body.error.metadata.attempts;
    expect(attempts).toHaveLength(6);
    expect(new Set(attempts.map((a) => `${a.question}:${a.provider}:${a.reason}`))).toEqual(
      new Set(['polite', 'topic', 'warmth'].flatMap((q) => [`${q}:mute:malformed_reply`, `${q}:primary:provider_error`])),
    );
    const after = await orgMoney();
    expect(after.balance.equals(before.balance)).toBe(true);
    expect(after.reserved.isZero()).toBe(true);
  });

  it('works through the Gemini adapter too (responseLogprobs)', async () => {
    const res = await post({ state: { a: 1 }, model: STACK_MODELS.chatGemini, questions: { polite: QUESTIONS.polite } });
    expect(res.status).toBe(200);
    close(res.body.answers.polite.noul, expected(['Y', 'N'])[0]);
  });
});

describe('routing and validation', () => {
  it('answers 400 parameters_unsupported when no endpoint returns log-probabilities', async () => {
    for (const model of ['acme/blind', STACK_MODELS.chatAnthropic]) {
      const res = await ask(model);
      expect(res.status).toBe(400);
      expect(res.body.error.metadata.reason).toBe('parameters_unsupported');
    }
    expect(s.fake.requests).toHaveLength(0);
  });

  it("answers under the caller's own question names: spaces, punctuation, Cyrillic", async () => {
    const name = 'Вежливо ли сообщение? (да/нет)';
    const res = await post({ state: { message: 'Спасибо!' }, model: 'acme/judge', questions: { [name]: QUESTIONS.polite } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.answers)).toEqual([name]);
    expect(res.body.answers[name].type).toBe('noul');
  });

  it('honours the inline form and the routing object', async () => {
    const inline = await ask('acme/judge@provider=primary');
    expect(inline.status).toBe(200);
    expect(mute.requests).toHaveLength(0);
    const ignored = await ask('acme/judge', { provider: { ignore: ['mute'] } });
    expect(ignored.status).toBe(200);
    expect(mute.requests).toHaveLength(0);
  });

  it('refuses data_residency, more than 32 questions and malformed questions with 400 naming the path', async () => {
    const residency = await ask('acme/judge', { provider: { data_residency: 'eu' } });
    expect(residency.status).toBe(400);
    expect(residency.body.error.details.errors).toEqual([expect.objectContaining({ path: '/provider/data_residency' })]);

    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`q${i}`, QUESTIONS.polite]));
    const tooMany = await post({ state: {}, model: 'acme/judge', questions: many });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.details.errors.map((e: { path: string }) => e.path)).toContain('/questions');

    const bad = await post({ state: {}, model: 'acme/judge', questions: { q: { type: 'choice', instructions: 'x', criteria: ['a', 'b'] } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.errors.map((e: { path: string }) => e.path)).toContain('/questions/q/criteria');

    const missing = await post({ model: 'acme/judge', questions: { q: QUESTIONS.polite } });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.errors.map((e: { path: string }) => e.path)).toContain('/state');
    expect(s.fake.requests).toHaveLength(0);
  });
});

describe('billing and history', () => {
  it('charges the summed usage at the catalog price, once, and writes a systemone history row', async () => {
    const before = await orgMoney();
    const res = await ask('acme/mixed');
    expect(res.status).toBe(200);
    expect(res.body.usage).toMatchObject({ input_tokens: 300, output_tokens: 3 });
    const cost = (3 * (100 * PRICE.prompt + 1 * PRICE.completion)) / 1e6;
    expect(res.body.usage.cost_rub).toBeCloseTo(cost, 9);

    const after = await orgMoney();
    expect(before.balance.minus(after.balance).toNumber()).toBeCloseTo(cost, 10);
    expect(after.reserved.isZero()).toBe(true);

    await s.settled(org.organizationId);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id: res.body.id } });
    expect(g).toMatchObject({ apiType: 'systemone', requestType: 'chat', responseMode: 'sync', status: 'completed', model: 'acme/mixed', provider: 'primary' });
    expect(money(g.clientCost).toNumber()).toBeCloseTo(cost, 10);
    expect(g.usage).toEqual({ inputTokens: 300, outputTokens: 3 });
    // One settlement: the ledger moves the balance by exactly the cost for this generation.
    const moved = await s.t.db.$queryRaw<Array<{ s: string }>>`SELECT COALESCE(SUM(amount), 0)::text AS s FROM ledger_entries WHERE generation_id = ${g.id}`;
    expect(money(moved[0].s).negated().equals(money(g.clientCost))).toBe(true);
  });

  it('answers 402 when the balance cannot cover the bound', async () => {
    const poor = await s.seed({ balance: '0.000001' });
    const res = await post({ state: {}, model: 'acme/mixed', questions: QUESTIONS }, poor.auth);
    expect(res.status).toBe(402);
    expect(s.fake.requests).toHaveLength(0);
  });
});
