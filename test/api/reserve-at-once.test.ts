import request from 'supertest';
import { money } from '../../shared/billing/money';
import { closeRowOf, type NewGeneration } from '../../shared/services/generation.service';
import { QUEUES } from '../../shared/queue/queue-names';
import type { TextJobData } from '../../shared/queue/job-catalog';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { orgMoney as heldMoney } from '../helpers/fixtures';

// Reserve and enqueue at once (docs/architecture.md, shared/queue/grants.ts): a waiting client's text or embeddings job
// is enqueued while its reservation commits; its worker calls no provider before the outcome reaches it, in memory
// from the API of its own process, or through Redis from another's, or from the database when that API died.

const CHAT = STACK_MODELS.chat;
const grantKey = (s: TestStack, id: string) => `${s.ctx.config.queuePrefix}:grant:${id}`;
const providerCalls = (s: TestStack) => s.fake.requests.filter((r) => r.method === 'POST').length;

const orgMoney = (s: TestStack, id: string) => heldMoney(s.t.db, id);

/** Until the text queue holds no job (a refused one must still end, without running). */
async function queueDrained(s: TestStack) {
  const q = s.ctx.queues[QUEUES.text];
  for (let i = 0; i < 200; i++) {
    const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
    if (Object.values(c).every((n) => n === 0)) return c;
    await new Promise((r) => setTimeout(r, 25));
  }
  return q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
}

for (const inProcess of [true, false]) {
  describe(inProcess ? 'the worker of the same process (outcome in memory)' : 'a worker of another process (outcome through Redis)', () => {
    let s: TestStack;
    beforeAll(async () => {
      s = await createTestStack({ grants: { inProcess } });
    });
    afterAll(() => s.close());

    const chat = (org: StackOrg, body: Record<string, unknown> = {}) =>
      request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: CHAT, messages: [{ role: 'user', content: 'hi' }], ...body });

    it('answers, charges what it showed, and leaves no outcome behind', async () => {
      const org = await s.seed({ balance: '100' });
      const res = await chat(org);
      expect(res.status).toBe(200);
      await s.settled(org.organizationId);
      const g = await s.t.db.generation.findUniqueOrThrow({ where: { id: res.body.id } });
      expect(g.status).toBe('completed');
      expect(money(g.clientCost).toNumber()).toBeCloseTo(res.body.usage.cost_rub, 10);
      expect((await orgMoney(s, org.organizationId)).reserved.isZero()).toBe(true);
      await queueDrained(s);
      expect(await s.ctx.redis.exists(grantKey(s, res.body.id))).toBe(0);
    });

    it(inProcess ? 'its job is claimed at enqueue by the worker of its process (shared/queue/claims.ts)' : 'its job waits in the queue for a worker to fetch it', async () => {
      const org = await s.seed({ balance: '100' });
      s.fake.setKnobs({ latencyMs: 300 });
      try {
        const pending = chat(org).then((r) => r);
        let lock: string | null = null;
        for (let i = 0; i < 100 && !lock; i++) {
          await new Promise((r) => setTimeout(r, 10));
          const [job] = await s.ctx.queues[QUEUES.text].getActive();
          if (job) lock = await s.ctx.redis.get(`${s.ctx.config.queuePrefix}:${QUEUES.text}:${job.id}:lock`);
        }
        expect((await pending).status).toBe(200);
        expect(typeof lock).toBe('string');
        expect(lock).toEqual(inProcess ? expect.stringContaining(':claim:') : expect.not.stringContaining(':claim:'));
      } finally {
        s.fake.setKnobs({});
      }
    });

    it('streams', async () => {
      const org = await s.seed({ balance: '100' });
      const res = await chat(org, { stream: true });
      expect(res.status).toBe(200);
      expect(res.text).toContain('data: [DONE]');
    });

    it('a refused reservation answers 402; its job ends without calling the provider', async () => {
      const poor = await s.seed({ balance: '0.00001' });
      const calls = providerCalls(s);
      const res = await chat(poor);
      expect(res.status).toBe(402);
      expect(res.body.error).toMatchObject({ code: 'INSUFFICIENT_BALANCE' });
      // The job was enqueued with the reservation and ends once it learns the refusal: nothing waits, runs or fails.
      expect(await queueDrained(s)).toEqual({ waiting: 0, active: 0, delayed: 0, prioritized: 0, failed: 0 });
      expect(providerCalls(s)).toBe(calls);
      expect(await s.t.db.generation.count({ where: { organizationId: poor.organizationId } })).toBe(0);
      expect(await orgMoney(s, poor.organizationId)).toEqual({ balance: money('0.00001'), reserved: money(0) });
    });

    it('less than the bound granted: the job runs as built for the grant (max_output_tokens lowered)', async () => {
      const modest = await s.seed({ balance: '0.01' }); // about 60 output tokens' worth at 160 RUB per million
      s.fake.setKnobs({ completionTokens: 10 });
      try {
        const res = await request(s.app).post('/v1/responses').set(modest.auth).send({ model: CHAT, input: 'a', max_output_tokens: 4096 });
        expect(res.status).toBe(200);
        expect(res.body.switchyard.warnings.join(' ')).toMatch(/max_output_tokens was lowered/);
        const sent = s.fake.requests.at(-1)?.body as { max_completion_tokens?: number; max_tokens?: number };
        expect(sent.max_completion_tokens ?? sent.max_tokens).toBeLessThan(100);
        await s.settled(modest.organizationId);
        const after = await orgMoney(s, modest.organizationId);
        expect(after.reserved.isZero()).toBe(true);
        expect(after.balance.greaterThanOrEqualTo(0)).toBe(true);
      } finally {
        s.fake.setKnobs({});
      }
    });
  });
}

describe('a job whose API process died before telling its outcome', () => {
  let s: TestStack;
  let org: StackOrg;
  beforeAll(async () => {
    s = await createTestStack({ grants: { checkMs: 50, orphanAfterMs: 300, waitMs: 600 } });
    org = await s.seed({ balance: '10' });
  });
  afterAll(() => s.close());

  let n = 0;
  const newId = () => `gen_atonce_${++n}_${Date.now()}`;
  const gen = (id: string): NewGeneration => ({
    id,
    organizationId: org.organizationId,
    apiKeyId: null,
    userId: null,
    model: CHAT,
    unifiedModelId: CHAT,
    modelDisplayName: 'GPT',
    requestType: 'chat',
    apiType: 'chat_completions',
    responseMode: 'sync',
    request: {},
    bound: '1',
  });
  /** The job an API process enqueued with its reservation, as it left it: no outcome told. */
  const enqueue = (id: string) => {
    const data: TextJobData = {
      generationId: id,
      organizationId: org.organizationId,
      apiKeyId: null,
      userId: null,
      candidates: [{ model: CHAT, slug: `${CHAT}:openai`, dropParams: [] }],
      warnings: [],
      replyTo: null,
      apiType: 'chat_completions',
      mode: 'sync',
      request: { input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }], stream: false },
      awaitsGrant: true,
    };
    return s.ctx.queues[QUEUES.text].add(QUEUES.text, data, { jobId: id, removeOnComplete: true });
  };
  const ended = async (id: string) => {
    for (let i = 0; i < 200; i++) {
      const g = await s.t.db.generation.findUnique({ where: { id } });
      if (g && g.status !== 'pending' && g.status !== 'processing') return g;
      await new Promise((r) => setTimeout(r, 25));
    }
    return s.t.db.generation.findUnique({ where: { id } });
  };

  it('its reservation committed: the generation ends failed and the money is released, with no provider call', async () => {
    const calls = providerCalls(s);
    const before = await orgMoney(s, org.organizationId);
    const id = newId();
    await s.ctx.generations.create(gen(id));
    expect((await orgMoney(s, org.organizationId)).reserved.toFixed(2)).toBe('1.00');
    await enqueue(id);
    const g = await ended(id);
    expect(g).toMatchObject({ status: 'failed', error: expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }) });
    expect(await orgMoney(s, org.organizationId)).toEqual(before);
    expect(providerCalls(s)).toBe(calls);
    expect(await queueDrained(s)).toMatchObject({ waiting: 0, active: 0, failed: 0 });
  });

  it('a promise its run made before the process died is kept, at the promised cost', async () => {
    const id = newId();
    await s.ctx.generations.create(gen(id));
    const row = closeRowOf(id, { status: 'completed', cost: '0.25', result: { cost: '0.25' } });
    await s.ctx.settlements.promise(org.organizationId, { row, replyTo: null, message: { type: 'done', payload: { cost: '0.25' } } });
    await enqueue(id);
    const g = await ended(id);
    expect(g?.status).toBe('completed');
    expect(money(g!.clientCost).toFixed(2)).toBe('0.25');
    expect(await s.ctx.settlements.read(org.organizationId, id)).toBeNull();
  });

  it('nothing reserved: the job ends after the wait without running', async () => {
    const calls = providerCalls(s);
    const id = newId();
    const started = Date.now();
    await enqueue(id);
    expect(await queueDrained(s)).toMatchObject({ waiting: 0, active: 0, failed: 0 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(providerCalls(s)).toBe(calls);
    expect(await s.t.db.generation.findUnique({ where: { id } })).toBeNull();
  });

  it('an outcome told through Redis is taken (a re-run after a stall, another process)', async () => {
    const calls = providerCalls(s);
    const id = newId();
    await s.ctx.generations.create(gen(id));
    await s.ctx.redis.set(grantKey(s, id), JSON.stringify({ granted: '1.0000000000' }), 'PX', 60_000);
    await enqueue(id);
    const g = await ended(id);
    expect(g?.status).toBe('completed');
    expect(providerCalls(s)).toBe(calls + 1);
    await s.settled(org.organizationId);
    expect((await orgMoney(s, org.organizationId)).reserved.isZero()).toBe(true);
    expect(await s.ctx.redis.exists(grantKey(s, id))).toBe(0);
  });
});
