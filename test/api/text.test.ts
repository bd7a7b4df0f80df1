import request from 'supertest';
import { money } from '../../shared/money';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { orgMoney as heldMoney } from '../helpers/fixtures';
import { waitFor, waitUntil } from '../helpers/until';
import { QUEUES } from '../../shared/queue/queue-names';
import { askedModel } from '../../shared/db/generation-reads';

const TEXT_PARAMS = ['temperature', 'top_p', 'tools', 'tool_choice', 'response_format', 'max_tokens', 'stream'];
const chat = (provider: string, price: Record<string, number> = { prompt: 40, completion: 160 }) => ({
  provider,
  upstreamModel: 'gpt-4.1-mini',
  price,
  supports: TEXT_PARAMS,
  maxOutputTokens: 4096,
});

let s: TestStack;
let org: StackOrg;

beforeAll(async () => {
  s = await createTestStack({
    env: { SYNC_WAIT_MS: '4000' },
    catalogOverrides: (url) => ({
      providers: {
        primary: { kind: 'openai', baseUrl: `${url}/openai/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', region: 'us', timeoutMs: 2000 },
        // Only primary's call is made to time out (below); the one a fallback lands on has room on a busy machine.
        backup: { kind: 'openai', baseUrl: `${url}/openai/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', region: 'eu', timeoutMs: 30_000 },
      },
      models: {
        'acme/duo': { displayName: 'Duo', type: 'chat', endpoints: [chat('primary'), chat('backup', { prompt: 20, completion: 80 })] },
        'acme/solo': { displayName: 'Solo', type: 'chat', endpoints: [chat('primary')] },
        // An endpoint as decisions.md's catalog example writes one: no `max_tokens` in `supports`.
        'acme/plain': { displayName: 'Plain', type: 'chat', endpoints: [{ ...chat('primary'), supports: ['temperature', 'top_p', 'tools', 'reasoning', 'logprobs', 'stream'] }] },
        // A reasoning model: it takes low, medium or high (shared/providers/openai/model-rules.ts), no sampling parameters.
        'acme/think': { displayName: 'Think', type: 'chat', endpoints: [{ ...chat('primary'), upstreamModel: 'o4-mini', supports: ['tools', 'tool_choice', 'reasoning', 'max_tokens', 'stream', 'seed'] }] },
        // `solo` is the name of two catalog models: a bare `solo` is ambiguous.
        'other/solo': { displayName: 'Other solo', type: 'chat', endpoints: [chat('backup')] },
      },
    }),
  });
  org = await s.seed({ balance: '1000' });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

const post = (body: object, auth = org.auth) => request(s.app).post('/v1/responses').set(auth).send(body);
/**
 * The record as the database holds it once the settlement the reply promised is committed (reads through the API wait
 * for it). A request drawn from a lease is recorded while its job runs: its reply may come first.
 */
async function generation(id: string) {
  const g = await waitUntil(async () => (await s.t.db.generation.findFirst({ where: { id } })) ?? undefined, 5_000);
  await s.settled(g.organizationId);
  return s.t.db.generation.findFirstOrThrow({ where: { id } });
}

async function orgMoney(id = org.organizationId) {
  await s.settled(id);
  return heldMoney(s.t.db, id);
}

describe('fallbacks', () => {
  it('moves on to the next endpoint after a 5xx and records both attempts', async () => {
    s.fake.setKnobs({ status: 500, failTimes: 1 });
    const res = await post({ model: 'acme/duo', input: 'hi' });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 200, error: null });
    const g = await generation(res.body.id);
    expect(g).toMatchObject({ status: 'completed', attemptsCount: 2, provider: 'backup', finalEndpointSlug: 'acme/duo:backup' });
    // The routing decision, explained: the candidates in order, and the attempt that failed with what.
    expect(g.routing).toMatchObject({
      candidates: ['acme/duo:primary', 'acme/duo:backup'],
      attempts: [{ provider: 'primary', reason: 'provider_error', status: 500 }],
      answeredBy: 'acme/duo:backup',
    });
    const detail = await request(s.app).get(`/v1/history/generations/${res.body.id}`).set(org.auth);
    expect(detail.body.routing.attempts).toHaveLength(1);
    expect(g.queueTimeMs).not.toBeNull();
    expect(g.generationTimeMs).not.toBeNull();
    expect(g.latencyMs).not.toBeNull();
  });

  it('answers 502 all_providers_failed with every attempt when all fail, and charges nothing', async () => {
    s.fake.setKnobs({ status: 503 });
    const before = await orgMoney();
    const res = await post({ model: 'acme/duo', input: 'hi' });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('BAD_GATEWAY');
    expect(res.body.error.metadata.reason).toBe('all_providers_failed');
    expect(res.body.error.metadata.attempts.map((a: { provider: string }) => a.provider)).toEqual(['primary', 'backup']);
    const after = await orgMoney();
    expect(after.balance.equals(before.balance)).toBe(true);
    expect(after.reserved.isZero()).toBe(true);
  });

  it('counts a timeout as a failed attempt (upstream_timeout) and tries the next endpoint', async () => {
    s.fake.setKnobs({ hang: true, failTimes: 1 }); // the first attempt hangs past primary's 2 s timeout
    const res = await post({ model: 'acme/duo', input: 'hi' });
    expect(res.status).toBe(200);
    const g = await generation(res.body.id);
    expect(g.attemptsCount).toBe(2);
  });

  it('does not fall back on a provider 400: the request itself is wrong', async () => {
    s.fake.setKnobs({ status: 400 });
    const res = await post({ model: 'acme/duo', input: 'hi' });
    expect(res.status).toBe(400);
    expect(res.body.error.metadata).toMatchObject({ reason: 'provider_error', provider_name: 'primary' });
  });

  it('tries the models array in order and names the model that answered', async () => {
    s.fake.setKnobs({ status: 500, failTimes: 1 });
    const res = await post({ model: 'acme/solo', models: [STACK_MODELS.chat], input: 'hi' });
    expect(res.status).toBe(200);
    expect(res.body.model).toBe(STACK_MODELS.chat);
  });

  it('names the model that answered in every streamed chat chunk after the head, and never an inline option', async () => {
    s.fake.setKnobs({ status: 500, failTimes: 1, text: 'one two three', streamChunks: 3 });
    const res = await request(s.app)
      .post('/v1/chat/completions')
      .set(org.auth)
      .send({ model: 'acme/solo@allow_fallbacks=true', models: [STACK_MODELS.chat], messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } })
      .buffer(true)
      .parse((r, cb) => {
        let data = '';
        r.on('data', (c: Buffer) => (data += c.toString()));
        r.on('end', () => cb(null, data));
      });
    const chunks = (res.body as string).split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as { model: string; choices: Array<{ delta: { content?: string } }> });
    // The head left before any endpoint answered: the model asked for, without its options.
    expect(chunks[0]!.model).toBe('acme/solo');
    expect(chunks.slice(1).map((c) => c.model)).toEqual(chunks.slice(1).map(() => STACK_MODELS.chat));
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('one two three');
  });

  it('names the model asked for, without inline options, until an endpoint answers (background, response.created)', async () => {
    const queued = await post({ model: 'acme/solo@provider=primary', input: 'hi', background: true });
    expect(queued.body).toMatchObject({ status: 'queued', model: 'acme/solo' });
    const streamed = await post({ model: 'acme/solo@provider=primary', input: 'hi', stream: true }).buffer(true).parse((r, cb) => {
      let data = '';
      r.on('data', (c: Buffer) => (data += c.toString()));
      r.on('end', () => cb(null, data));
    });
    const created = (streamed.body as string).split('\n').find((l) => l.startsWith('data: {') && l.includes('"response.created"'));
    expect(JSON.parse(created!.slice(6)).response.model).toBe('acme/solo');
    // Ended before the next test sets failures on the fake: a late call of this job would take one of them.
    await waitUntil(async () => ((await generation(queued.body.id)).status === 'completed' ? true : undefined));
  });

  it('falls back to nothing with allow_fallbacks false', async () => {
    s.fake.setKnobs({ status: 500, failTimes: 1 });
    const res = await post({ model: 'acme/duo', input: 'hi', provider: { allow_fallbacks: false } });
    expect(res.status).toBe(502);
    expect(res.body.error.metadata.attempts).toHaveLength(1);
  });
});

describe('routing constraints', () => {
  it('honours the inline form model@provider=X', async () => {
    const res = await post({ model: 'acme/duo@provider=backup', input: 'hi' });
    expect((await generation(res.body.id)).provider).toBe('backup');
  });

  it('refuses unknown inline options with 400', async () => {
    const res = await post({ model: 'acme/duo@colour=blue', input: 'hi' });
    expect(res.status).toBe(400);
  });

  it('sorts by price and filters by data residency, ignore and only', async () => {
    expect((await generation((await post({ model: 'acme/duo', input: 'a', provider: { sort: 'price' } })).body.id)).provider).toBe('backup');
    expect((await generation((await post({ model: 'acme/duo', input: 'a', provider: { data_residency: 'eu' } })).body.id)).provider).toBe('backup');
    expect((await generation((await post({ model: 'acme/duo', input: 'a', provider: { ignore: ['primary'] } })).body.id)).provider).toBe('backup');
    expect((await generation((await post({ model: 'acme/duo', input: 'a', provider: { only: ['backup'] } })).body.id)).provider).toBe('backup');
  });

  it('explains a refusal: price_above_max lists each candidate and why it was dropped', async () => {
    const res = await post({ model: 'acme/duo', input: 'a', provider: { max_price: { prompt: 1 } } });
    expect(res.status).toBe(400);
    expect(res.body.error.metadata.reason).toBe('price_above_max');
    expect(res.body.error.metadata.candidates).toEqual([
      expect.objectContaining({ provider: 'primary', reason: 'max_price' }),
      expect.objectContaining({ provider: 'backup', reason: 'max_price' }),
    ]);
  });

  it('answers 404 model_not_found and 400 parameters_unsupported', async () => {
    const missing = await post({ model: 'acme/none', input: 'a' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.metadata.reason).toBe('model_not_found');
    const unsupported = await post({ model: 'acme/duo', input: 'a', top_k: 5, provider: { require_parameters: true } });
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.error.metadata.reason).toBe('parameters_unsupported');
  });

  it('takes a bare id for the one catalog model of that name; an ambiguous one is 404 naming the candidates', async () => {
    const res = await post({ model: 'duo', input: 'a' });
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('acme/duo');
    expect(askedModel(await generation(res.body.id))).toBe('acme/duo');
    const inline = await post({ model: 'duo@provider=backup', input: 'a' });
    expect([inline.status, inline.body.model]).toEqual([200, 'acme/duo']);
    const fallback = await post({ models: ['none-such', 'duo'], input: 'a' });
    expect(fallback.status).toBe(404);
    const ambiguous = await post({ model: 'solo', input: 'a' });
    expect(ambiguous.status).toBe(404);
    expect(ambiguous.body.error).toMatchObject({ code: 'NOT_FOUND', type: 'not_found_error', metadata: { reason: 'model_not_found' } });
    expect(ambiguous.body.error.message).toContain('acme/solo, other/solo');
    const one = await request(s.app).get('/v1/models/duo').set(org.auth);
    expect([one.status, one.body.id]).toEqual([200, 'acme/duo']);
    expect((await request(s.app).get('/v1/models/solo').set(org.auth)).status).toBe(404);
  });

  it('a reasoning effort no endpoint takes is dropped with a warning and not echoed, in the reply or read back', async () => {
    const res = await post({ model: 'acme/solo', input: 'a', reasoning: { effort: 'high' } });
    expect(res.status).toBe(200);
    expect(res.body.switchyard.warnings.join(' ')).toMatch(/reasoning/);
    expect(s.fake.requests.at(-1)?.body).not.toHaveProperty('reasoning_effort');
    expect(res.body.reasoning).toEqual({ effort: null, summary: null });
    const read = await request(s.app).get(`/v1/responses/${res.body.id}`).set(org.auth);
    expect(read.body.reasoning).toEqual({ effort: null, summary: null });
    const think = await post({ model: 'acme/think', input: 'a', reasoning: { effort: 'high' } });
    expect(think.body.reasoning).toEqual({ effort: 'high', summary: null });
  });

  it('drops an unsupported parameter with a warning when require_parameters is off', async () => {
    const res = await post({ model: 'acme/solo', input: 'a', top_k: 5 });
    expect(res.status).toBe(200);
    expect(res.body.switchyard.warnings.join(' ')).toMatch(/top_k/);
    expect(s.fake.requests.at(-1)?.body).not.toHaveProperty('top_k');
  });

  it("maps the inline reasoning_effort as the body's reasoning.effort: none is the least a model takes, xhigh the most", async () => {
    const sentEffort = () => (s.fake.requests.at(-1)?.body as Record<string, unknown>).reasoning_effort;
    const sent: Record<string, unknown> = {};
    const warned: Record<string, string> = {};
    for (const effort of ['none', 'low', 'xhigh']) {
      const inline = await post({ model: `acme/think@reasoning_effort=${effort}`, input: 'a' });
      expect(inline.status).toBe(200);
      sent[effort] = sentEffort();
      warned[effort] = (inline.body.switchyard.warnings ?? []).join(' ');
      expect((await post({ model: 'acme/think', input: 'a', reasoning: { effort } })).status).toBe(200);
      expect(sent[effort]).toEqual(sentEffort());
    }
    // o4-mini takes low, medium or high: it cannot stop reasoning (its least is used, with a warning); high is its most.
    expect(sent).toEqual({ none: 'low', low: 'low', xhigh: 'high' });
    expect(warned).toEqual({ none: expect.stringMatching(/"none" of parameter 'reasoning.effort' is not offered by o4-mini/), low: '', xhigh: '' });
  });

  it('counts the inline reasoning_effort as asking for reasoning: dropped with a warning where unsupported, or excluded', async () => {
    const res = await post({ model: 'acme/solo@reasoning_effort=high', input: 'a' });
    expect(res.status).toBe(200);
    expect(res.body.switchyard.warnings.join(' ')).toMatch(/reasoning/);
    expect(s.fake.requests.at(-1)?.body).not.toHaveProperty('reasoning_effort');
    const excluded = await post({ model: 'acme/solo@reasoning_effort=high', input: 'a', provider: { require_parameters: true } });
    expect(excluded.status).toBe(400);
    expect(excluded.body.error.metadata.reason).toBe('parameters_unsupported');
    // `none` asks for no reasoning: nothing to drop.
    expect((await post({ model: 'acme/solo@reasoning_effort=none', input: 'a', provider: { require_parameters: true } })).status).toBe(200);
  });

  it('needs no max_tokens in supports: every endpoint takes an output limit (a catalog with the contract names works unchanged)', async () => {
    const res = await post({ model: 'acme/plain', input: 'a', max_output_tokens: 50, provider: { require_parameters: true } });
    expect(res.status).toBe(200);
    expect(res.body.switchyard.warnings).toBeUndefined();
    expect(s.fake.requests.at(-1)?.body).toMatchObject({ max_completion_tokens: 50 });
  });

  it('sticks to the endpoint that served the same prompt_cache_key', async () => {
    const first = await generation((await post({ model: 'acme/duo', input: 'a', prompt_cache_key: 'conv-1', provider: { sort: 'price' } })).body.id);
    expect(first.provider).toBe('backup');
    const second = await generation((await post({ model: 'acme/duo', input: 'b', prompt_cache_key: 'conv-1' })).body.id);
    expect(second.provider).toBe('backup');
    const other = await generation((await post({ model: 'acme/duo', input: 'b', prompt_cache_key: 'conv-2' })).body.id);
    expect(other.provider).toBe('primary');
  });

  it('refuses a model the key may not use with 403', async () => {
    const limited = await org.accounts.createKey({ organizationId: org.organizationId, allowedModels: ['acme/solo'] });
    const res = await post({ model: 'acme/duo', input: 'a' }, { Authorization: `Bearer ${limited.key}` });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
  });
});

describe('money', () => {
  it('charges the provider usage at the catalog price and releases the rest', async () => {
    s.fake.setKnobs({ promptTokens: 2000, completionTokens: 1000 });
    const before = await orgMoney();
    const res = await post({ model: 'acme/solo', input: 'a', max_output_tokens: 3000 });
    const cost = (2000 * 40 + 1000 * 160) / 1e6;
    expect(res.body.usage.cost_rub).toBeCloseTo(cost, 10);
    const after = await orgMoney();
    expect(before.balance.minus(after.balance).toNumber()).toBeCloseTo(cost, 10);
    expect(after.reserved.isZero()).toBe(true);
    expect(money((await generation(res.body.id)).clientCost).toNumber()).toBeCloseTo(cost, 10);
  });

  it('reserves for the images of a request, not for their URLs: what the balance cannot hold is refused (402), not served uncollected', async () => {
    // 100 images at 40 RUB per million input tokens: about 10 RUB of input; their URLs alone are about 0.1 RUB.
    const modest = await s.seed({ balance: '2' });
    const images = Array.from({ length: 100 }, (_, i) => ({ type: 'input_image', image_url: `https://example.com/${i}.png`, detail: 'high' }));
    const sent = s.fake.requests.length;
    const refused = await post({ model: 'acme/solo', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Describe them' }, ...images] }], max_output_tokens: 16 }, modest.auth);
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('INSUFFICIENT_BALANCE');
    expect(s.fake.requests.length).toBe(sent);
    const few = await post({ model: 'acme/solo', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Describe it' }, images[0]] }], max_output_tokens: 16 }, modest.auth);
    expect(few.status).toBe(200);
  });

  it('answers 402 when the balance cannot pay even a short answer, and lowers max_output_tokens when it can', async () => {
    const poor = await s.seed({ balance: '0.00001' });
    const refused = await post({ model: 'acme/solo', input: 'a' }, poor.auth);
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatchObject({ code: 'INSUFFICIENT_BALANCE', metadata: { reason: 'balance_insufficient' } });

    const modest = await s.seed({ balance: '0.01' }); // about 60 output tokens' worth at 160 RUB per million
    s.fake.setKnobs({ completionTokens: 10 });
    const shrunk = await post({ model: 'acme/solo', input: 'a', max_output_tokens: 4096 }, modest.auth);
    expect(shrunk.status).toBe(200);
    expect(shrunk.body.switchyard.warnings.join(' ')).toMatch(/max_output_tokens was lowered/);
    const sent = s.fake.requests.at(-1)?.body as { max_completion_tokens?: number; max_tokens?: number };
    expect(sent.max_completion_tokens ?? sent.max_tokens).toBeLessThan(4096);
  });

  it('answers 402 key_limit_exceeded when a key limit is spent', async () => {
    const limited = await s.seed({ balance: '100', keyLimit: '0.00001' });
    const res = await post({ model: 'acme/solo', input: 'a' }, limited.auth);
    expect(res.status).toBe(402);
    expect(res.body.error.metadata.reason).toBe('key_limit_exceeded');
  });

  it('never overspends under a concurrent burst: the balance stays ≥ 0 and the ledger sums to it', async () => {
    s.fake.setKnobs({ promptTokens: 100, completionTokens: 100 });
    const burst = await s.seed({ balance: '0.2' });
    // Each request reserves its bound (~0.66 RUB at 4096 output tokens) or a shrunk one; only some fit.
    const replies = await Promise.all(Array.from({ length: 30 }, () => post({ model: 'acme/solo', input: 'a' }, burst.auth)));
    const statuses = replies.map((r) => r.status);
    expect(statuses.every((st) => st === 200 || st === 402)).toBe(true);
    expect(statuses.filter((st) => st === 200).length).toBeGreaterThan(0);
    const m = await orgMoney(burst.organizationId);
    expect(m.balance.isNegative()).toBe(false);
    expect(m.reserved.isZero()).toBe(true);
    const sum = await s.t.db.$queryRaw<Array<{ s: string }>>`SELECT COALESCE(SUM(amount),0)::text AS s FROM ledger_entries WHERE organization_id = ${burst.organizationId}`;
    expect(money(sum[0].s).equals(m.balance)).toBe(true);
  });

  it('answers 408 past SYNC_WAIT_MS, cancels the job and charges nothing', async () => {
    s.fake.setKnobs({ latencyMs: 4600 }); // under the provider timeout (10 s), over SYNC_WAIT_MS (4 s)
    const before = await orgMoney();
    const res = await post({ model: STACK_MODELS.chat, input: 'slow' });
    expect(res.status).toBe(408);
    expect(res.body.error.code).toBe('REQUEST_TIMEOUT');
    const g = await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId }, orderBy: { createdAt: 'desc' } });
    expect(g.status).toBe('cancelled');
    expect(g.isCancelled).toBe(true);
    // The worker ends after the reply (its provider call cut by the cancel): still nothing charged.
    const live = ['active', 'waiting', 'delayed', 'prioritized'];
    await waitFor('the job to end', async () => !live.includes(await s.ctx.queues[QUEUES.text].getJobState(g.id)) && s.fake.requests.every((r) => r.endedAt !== undefined));
    const after = await orgMoney();
    expect(after.balance.equals(before.balance)).toBe(true);
    expect(after.reserved.isZero()).toBe(true);
  });
});

describe('modes', () => {
  it('background: true answers queued at once; GET /v1/responses/{id} reads it until completed', async () => {
    s.fake.setKnobs({ latencyMs: 200 });
    const res = await post({ model: 'acme/solo', input: 'later', background: true });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('queued');
    const status = () => request(s.app).get(`/v1/responses/${res.body.id}`).set(org.auth).then((r) => r.body.status as string);
    await waitFor('the response completed', async () => (await status()) === 'completed');
    const other = await s.seed();
    expect((await request(s.app).get(`/v1/responses/${res.body.id}`).set(other.auth)).status).toBe(404);
  });

  it('previous_response_id continues a stored conversation with a stateless provider', async () => {
    s.fake.setKnobs({ text: 'I am Duo' });
    const first = await post({ model: 'acme/solo', input: 'Who are you?' });
    s.fake.setKnobs({ text: 'Still Duo' });
    const second = await post({ model: 'acme/solo', input: 'Again?', previous_response_id: first.body.id });
    expect(second.status).toBe(200);
    const sent = s.fake.requests.at(-1)?.body as { messages: Array<{ role: string; content: unknown }> };
    expect(sent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(sent.messages)).toContain('I am Duo');
    const unknown = await post({ model: 'acme/solo', input: 'x', previous_response_id: 'resp_nope' });
    expect(unknown.status).toBe(404);
  });

  it('ends a stream that breaks after content with response.failed, and bills what was produced', async () => {
    s.fake.setKnobs({ failMidStream: true, text: 'one two three four five six seven eight', streamChunks: 8 });
    const before = await orgMoney();
    const res = await post({ model: 'acme/solo', input: 'stream', stream: true }).buffer(true).parse((r, cb) => {
      let data = '';
      r.on('data', (c: Buffer) => (data += c.toString()));
      r.on('end', () => cb(null, data));
    });
    const events = (res.body as string).split('\n').filter((l) => l.startsWith('event: ')).map((l) => l.slice(7));
    expect(events).toContain('response.output_text.delta');
    expect(events.at(-1)).toBe('response.failed');
    const after = await orgMoney();
    expect(after.balance.lessThan(before.balance)).toBe(true);
    expect(after.reserved.isZero()).toBe(true);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId }, orderBy: { createdAt: 'desc' } });
    expect(g.status).toBe('failed');
    expect(money(g.clientCost).greaterThan(0)).toBe(true);
  });

  it('falls back before the first streamed byte', async () => {
    s.fake.setKnobs({ status: 500, failTimes: 1 });
    const res = await post({ model: 'acme/duo', input: 'stream', stream: true }).buffer(true).parse((r, cb) => {
      let data = '';
      r.on('data', (c: Buffer) => (data += c.toString()));
      r.on('end', () => cb(null, data));
    });
    expect(res.body as string).toContain('event: response.completed');
  });
});

describe('masker plugin', () => {
  it('hides personal data from the provider and restores it in the answer, plain and streamed', async () => {
    s.fake.setKnobs({ text: 'I will write to [EMAIL_1] and call [PHONE_1].' });
    const res = await post({ model: 'acme/solo', input: 'My mail is anna@example.org, phone +7 912 345 67 89', plugins: ['masker'] });
    expect(res.status).toBe(200);
    const sent = JSON.stringify(s.fake.requests.at(-1)?.body);
    expect(sent).not.toContain('anna@example.org');
    expect(sent).toContain('[EMAIL_1]');
    expect(res.body.output_text).toBe('I will write to anna@example.org and call +7 912 345 67 89.');
    expect(res.body.usage.plugins).toMatchObject({ masker: { operations: ['mask', 'unmask'], cost_rub: 0 }, total_cost_rub: 0 });

    s.fake.setKnobs({ text: 'Writing to [EMAIL_1] now', streamChunks: 6 });
    const streamed = await post({ model: 'acme/solo', input: 'mail anna@example.org', plugins: ['masker'], stream: true }).buffer(true).parse((r, cb) => {
      let data = '';
      r.on('data', (c: Buffer) => (data += c.toString()));
      r.on('end', () => cb(null, data));
    });
    const deltas = (streamed.body as string)
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l.includes('"response.output_text.delta"'))
      .map((l) => JSON.parse(l.slice(6)).delta as string)
      .join('');
    expect(deltas).toBe('Writing to anna@example.org now');
  });
});

describe('model ids that name inherited properties', () => {
  it.each(['valueOf', 'constructor', '__proto__', 'toString', 'hasOwnProperty'])('answers 404 model_not_found for %s', async (model) => {
    const res = await post({ model, input: 'hi' });
    expect(res.status).toBe(404);
    expect(res.body.error.metadata.reason).toBe('model_not_found');
    expect((await request(s.app).get(`/v1/models/${model}`).set(org.auth)).status).toBe(404);
  });
});
