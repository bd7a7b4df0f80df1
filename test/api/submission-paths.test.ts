import request from 'supertest';
import { money } from '../../shared/money';
import type { NewGeneration } from '../../shared/services/generation.service';
import { closeRowOf } from '../../shared/billing/ledger';
import { QUEUES } from '../../shared/queue/queue-names';
import type { TextJobData } from '../../shared/queue/job-catalog';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { orgMoney as heldMoney } from '../helpers/fixtures';
import { waitFor, waitUntil } from '../helpers/until';

// The two submission paths (docs/architecture.md "Submitting", GenerationGateway.submit): `drawn` (a waiting client's
// text or embeddings job claimed by its own process's worker, its money drawn from a lease, its record committing while
// it runs) and `reserved` (reserved and recorded, then enqueued). Workers of another process (a lane of their own) claim
// nothing, so every request there takes the `reserved` path.

const CHAT = STACK_MODELS.chat;
const providerCalls = (s: TestStack) => s.fake.requests.filter((r) => r.method === 'POST').length;

const orgMoney = (s: TestStack, id: string) => heldMoney(s.t.db, id);

/** Until the text queue holds no job (a refused one must still end, without running). */
async function queueDrained(s: TestStack) {
  const counts = () => s.ctx.queues[QUEUES.text].getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
  // Its counts when it does not drain, for the assertion to show.
  return waitUntil(async () => {
    const c = await counts();
    return Object.values(c).every((n) => n === 0) ? c : undefined;
  }, 10_000).catch(counts);
}

/** Leases the organization's requests drew from (reservation rows `lease_…`). */
const leasesOf = (s: TestStack, organizationId: string) => s.t.db.reservation.count({ where: { organizationId, generationId: { startsWith: 'lease_' } } });

for (const inProcess of [true, false]) {
  describe(inProcess ? 'the workers of the same process (one lane)' : 'workers of another process (a lane of their own)', () => {
    let s: TestStack;
    beforeAll(async () => {
      s = await createTestStack({ separateLanes: !inProcess });
    });
    afterAll(() => s.close());

    const chat = (org: StackOrg, body: Record<string, unknown> = {}) =>
      request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: CHAT, messages: [{ role: 'user', content: 'hi' }], ...body });

    it('answers and charges what it showed; a warm caller is drawn from a lease only where its job can be claimed', async () => {
      const org = await s.seed({ balance: '10000' }); // room for LEASE_HEADROOM leases of LEASE_REQUESTS requests
      const replies = [];
      for (let i = 0; i < 6; i++) replies.push(await chat(org));
      for (const res of replies) {
        expect(res.status).toBe(200);
        await s.settled(org.organizationId);
        await s.ctx.lane.recordOf(res.body.id)?.committed.catch(() => undefined);
        const g = await s.t.db.generation.findFirstOrThrow({ where: { id: res.body.id } });
        expect(g.status).toBe('completed');
        expect(money(g.clientCost).toNumber()).toBeCloseTo(res.body.usage.cost_rub, 10);
      }
      expect((await orgMoney(s, org.organizationId)).reserved.isZero()).toBe(true);
      // One lane: the first request reserves and a lease is taken behind it, the next ones draw from it. Separate lanes:
      // the API has no worker to claim for, so it never draws (nor takes a lease). Leases off (LEASE_REQUESTS=0): none.
      expect((await leasesOf(s, org.organizationId)) > 0).toBe(inProcess && s.ctx.config.leases.requests > 0);
      await queueDrained(s);
      expect(s.ctx.lane.pendingRecords).toBe(0);
    });

    it(inProcess ? 'its job is claimed at enqueue by the worker of its process (shared/queue/claims.ts)' : 'its job waits in the queue for a worker to fetch it', async () => {
      const org = await s.seed({ balance: '100' });
      // The job holds its lock while its call is held by the provider: read it once the call is there, then let go.
      s.fake.setKnobs({ holdReplies: true });
      try {
        const calls = providerCalls(s);
        const pending = chat(org).then((r) => r);
        await waitFor('the call at the provider', () => providerCalls(s) > calls);
        const [job] = await s.ctx.queues[QUEUES.text].getActive();
        const lock = job ? await s.ctx.redis.get(`${s.ctx.config.queuePrefix}:${QUEUES.text}:${job.id}:lock`) : null;
        s.fake.setKnobs({});
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

    it('a refused reservation answers 402; no job is added and no provider called', async () => {
      const poor = await s.seed({ balance: '0.00001' });
      const calls = providerCalls(s);
      const res = await chat(poor);
      expect(res.status).toBe(402);
      expect(res.body.error).toMatchObject({ code: 'INSUFFICIENT_BALANCE' });
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

describe('a job drawn from a lease, run outside the run its process claimed it for (that process died)', () => {
  let s: TestStack;
  let org: StackOrg;
  beforeAll(async () => {
    s = await createTestStack();
    org = await s.seed({ balance: '10' });
  });
  afterAll(() => s.close());

  let n = 0;
  const newId = () => `gen_drawn_${++n}_${Date.now()}`;
  const gen = (id: string): NewGeneration => ({
    id,
    organizationId: org.organizationId,
    apiKeyId: null,
    userId: null,
    model: CHAT,
    unifiedModelId: CHAT,
    requestType: 'chat',
    apiType: 'chat_completions',
    responseMode: 'sync',
    request: {},
    bound: '1',
  });
  /** The job a process claimed with its money drawn from a lease, as a re-run elsewhere finds it: no record in this lane. */
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
      drawn: true,
    };
    return s.ctx.queues[QUEUES.text].add(QUEUES.text, data, { jobId: id, removeOnComplete: true });
  };
  const ended = async (id: string) => {
    const read = () => s.t.db.generation.findFirst({ where: { id } });
    // The record as it stands when it does not end, for the assertion to show.
    return waitUntil(async () => {
      const g = await read();
      return g && g.status !== 'pending' && g.status !== 'processing' ? g : undefined;
    }, 10_000).catch(read);
  };

  it('its record committed: the generation ends failed and the money is released, with no provider call', async () => {
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
});
