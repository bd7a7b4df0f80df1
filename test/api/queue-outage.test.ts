import { Queue } from 'bullmq';
import request from 'supertest';
import { money } from '../../shared/money';
import { createRedis, whenReady } from '../../shared/queue/redis';
import { QUEUE_NAMES, type QueueName } from '../../shared/queue/queue-names';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { waitUntil } from '../helpers/until';

// Requests refused because the queue is unavailable (Redis down) never reached a provider: the client gets 503, the
// reservation is released, and no generation is left in the history (docs/decisions.md "Refused before the queue").

describe('the queue unavailable: refused requests leave no history and nothing reserved', () => {
  let s: TestStack;
  let real: Record<QueueName, Queue>;
  beforeAll(async () => {
    // Leases on (LEASE_REQUESTS): the later sync requests are granted from one, in memory.
    s = await createTestStack({ env: { LEASE_REQUESTS: '4', LEASE_HEADROOM: '1', LEASE_IDLE_MS: '200' } });
    real = { ...s.ctx.queues };
  });
  afterAll(async () => {
    Object.assign(s.ctx.queues, real);
    await s.close();
  });

  /** The API's queues on a Redis connection that went away (its commands fail at once, as in an outage). */
  async function queuesDown(): Promise<() => Promise<void>> {
    const gone = createRedis(TEST_REDIS_URL, { name: 'test-queue-outage' });
    await whenReady(gone);
    const dead = Object.fromEntries(QUEUE_NAMES.map((q) => [q, new Queue(q, { connection: gone, prefix: s.ctx.config.queuePrefix })])) as Record<QueueName, Queue>;
    await Promise.all(Object.values(dead).map((q) => q.waitUntilReady()));
    gone.disconnect();
    Object.assign(s.ctx.queues, dead);
    return async () => {
      Object.assign(s.ctx.queues, real);
      await Promise.all(Object.values(dead).map((q) => q.close().catch(() => undefined)));
    };
  }

  const text = (org: StackOrg, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    request(s.app)
      .post('/v1/responses')
      .set({ ...org.auth, ...headers })
      .send({ model: STACK_MODELS.chat, input: 'refused', max_output_tokens: 32, ...body });

  it('503 SERVICE_UNAVAILABLE for each, none in /v1/history/generations, reserved back to 0, and a repeat of a keyed one runs', async () => {
    const org = await s.seed({ balance: '100' });
    const calls = s.fake.requests.length;
    const up = await queuesDown();
    let replies: request.Response[];
    try {
      replies = [];
      // Sync (a lease's draw whose claim cannot be added goes back, and the request reserves for itself), keyed, background.
      for (let i = 0; i < 4; i++) replies.push(await text(org));
      replies.push(await text(org, {}, { 'Idempotency-Key': 'refused-1' }));
      replies.push(await text(org, { background: true }));
      replies.push(await request(s.app).post('/v1/embeddings').set(org.auth).send({ model: STACK_MODELS.embedding, input: 'refused' }));
    } finally {
      await up();
    }
    expect(replies.map((r) => [r.status, r.body.error?.code])).toEqual(replies.map(() => [503, 'SERVICE_UNAVAILABLE']));
    expect(s.fake.requests.length).toBe(calls);

    const history = await request(s.app).get('/v1/history/generations').set(org.auth);
    expect(history.status).toBe(200);
    expect(history.body.items).toEqual([]);
    expect(await s.t.db.generation.count({ where: { organizationId: org.organizationId } })).toBe(0);
    // The lease taken meanwhile is given back once idle.
    await waitUntil(async () => (money((await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } })).reserved).isZero() ? true : undefined), 10_000);
    const o = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    expect(money(o.balance).toFixed(2)).toBe('100.00');
    // The ledger keeps each refused request's reserve and release: no net effect.
    const entries = await s.t.db.ledgerEntry.findMany({ where: { organizationId: org.organizationId, NOT: { generationId: { startsWith: 'lease_' } } } });
    const kinds = new Map<string, string[]>();
    for (const e of entries) kinds.set(e.generationId!, [...(kinds.get(e.generationId!) ?? []), e.kind].sort());
    expect([...kinds.values()]).toEqual(replies.map(() => ['release', 'reserve']));
    expect(entries.every((e) => money(e.amount).isZero())).toBe(true);
    // None was recorded from a lease: a job drawn from one is added only if claimed, and none could be.
    expect(entries.filter((e) => e.kind === 'reserve').every((e) => !money(e.reservedDelta).isZero())).toBe(true);

    // Once the queue is back, the keyed request repeated runs (its key was not kept for a generation that is gone).
    const again = await text(org, {}, { 'Idempotency-Key': 'refused-1' });
    expect(again.status).toBe(200);
    await s.settled(org.organizationId);
    const after = await request(s.app).get('/v1/history/generations').set(org.auth);
    expect(after.body.items.map((i: { id: string }) => i.id)).toEqual([again.body.id]);
    expect(after.body.items[0].status).toBe('completed');
  });
});
