/**
 * A generation nobody waits for any more stops calling its provider: a synchronous timeout (SYNC_WAIT_MS)
 * cancels it uncharged AND aborts the upstream HTTP call (the fake sees the connection closed), for text,
 * embeddings and typed questions. An embeddings job is cancelled on its own queue (it used to be looked for
 * in the text queue, so it stayed and still called the provider).
 */
import request from 'supertest';
import { money } from '../../shared/money';
import { QUEUES } from '../../shared/queue/queue-names';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitFor, waitUntil } from '../helpers/until';

const SYNC_WAIT_MS = 600;
/** The fake answers long after the timeout: if the call were not aborted, it would complete. */
const SLOW_MS = SYNC_WAIT_MS * 5;

describe('synchronous timeouts abort the upstream call', () => {
  let s: TestStack;
  beforeAll(async () => {
    s = await createTestStack({ env: { SYNC_WAIT_MS: String(SYNC_WAIT_MS) } });
  });
  afterAll(() => s.close());
  beforeEach(() => s.fake.reset());

  async function expectAbortedAndFree(org: StackOrg, path: string) {
    const aborted = await s.fake.waitForAborted(1);
    expect(aborted[0].path).toBe(path);
    // Once its job has ended nothing can call again or charge: still exactly one call, nothing charged.
    const g = await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId } });
    const live = ['active', 'waiting', 'delayed', 'prioritized'];
    await waitFor('the job to end', async () => {
      for (const q of [QUEUES.text, QUEUES.embeddings]) if (live.includes(await s.ctx.queues[q].getJobState(g.id))) return false;
      return true;
    });
    expect(s.fake.requests.filter((r) => r.path === path)).toHaveLength(1);
    expect(g.status).toBe('cancelled');
    expect(money(g.clientCost).isZero()).toBe(true);
    // What a lease of the process held for the organization is given back once the lease is idle.
    const o = await waitUntil(async () => {
      const row = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
      return money(row.reserved).isZero() ? row : undefined;
    });
    expect(money(o.balance).equals('10')).toBe(true);
  }

  it('embeddings: 408, the upstream request is aborted, nothing charged', async () => {
    const org = await s.seed({ balance: '10' });
    s.fake.setKnobs({ latencyMs: SLOW_MS });
    const res = await request(s.app).post('/v1/embeddings').set(org.auth).send({ model: STACK_MODELS.embedding, input: 'late vector' });
    expect(res.status).toBe(408);
    await expectAbortedAndFree(org, '/openai/v1/embeddings');
  });

  it('text (responses): 408, the upstream request is aborted, nothing charged', async () => {
    const org = await s.seed({ balance: '10' });
    s.fake.setKnobs({ latencyMs: SLOW_MS });
    const res = await request(s.app).post('/v1/responses').set(org.auth).send({ model: STACK_MODELS.chat, input: 'slow answer' });
    expect(res.status).toBe(408);
    await expectAbortedAndFree(org, '/openai/v1/chat/completions');
  });

  it('typed questions (/v1/systemone): 408, the upstream request is aborted, nothing charged', async () => {
    const org = await s.seed({ balance: '10' });
    s.fake.setKnobs({ latencyMs: SLOW_MS, logprobs: [{ Y: -0.3, N: -1.5 }] });
    const res = await request(s.app)
      .post('/v1/systemone')
      .set(org.auth)
      .send({ state: { message: 'hello' }, model: STACK_MODELS.chat, questions: { polite: { type: 'noul', instructions: 'Is it polite?' } } });
    expect(res.status).toBe(408);
    await expectAbortedAndFree(org, '/openai/v1/chat/completions');
  });
});

describe('an embeddings timeout removes its job from the embeddings queue', () => {
  let s: TestStack;
  beforeAll(async () => {
    // No workers: the job waits in its queue, as when every worker is busy.
    s = await createTestStack({ env: { SYNC_WAIT_MS: String(SYNC_WAIT_MS) }, noWorkers: true });
  });
  afterAll(() => s.close());

  it('the job is gone, so no worker ever calls the provider for it', async () => {
    const org = await s.seed({ balance: '10' });
    const res = await request(s.app).post('/v1/embeddings').set(org.auth).send({ model: STACK_MODELS.embedding, input: 'never sent' });
    expect(res.status).toBe(408);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId } });
    expect(g.status).toBe('cancelled');
    expect(await s.ctx.queues[QUEUES.embeddings].getJob(g.id)).toBeUndefined();
    expect(await s.ctx.queues[QUEUES.embeddings].count()).toBe(0);
  });
});
