import request from 'supertest';
import { money } from '../../shared/money';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { orgMoney } from '../helpers/fixtures';
import type { RecordedRequest } from '../../fakes/fake-provider';
import { createRedis } from '../../shared/queue/redis';
import { LocalLane } from '../../shared/runtime/local-lane';
import { startWorkerPool, type WorkerPool } from '../../workers/worker-pool';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { waitFor } from '../helpers/until';

// The default share (workers/services/default-share.ts, docs/architecture.md "Fair queues"): with no cap set, an
// organization holding every text slot of a worker process with slow calls does not make another organization's next
// call wait for one of them to end; alone, it still gets every slot.

const CHAT = STACK_MODELS.chat;
const SLOTS = 4;
const SLOW_MS = 4000;

/**
 * The most of `reqs` at the provider at once. With `latencyMs`, a call ends when the fake answers (its start +
 * latency): its recorded end (the socket's close) may come after the next call of the same slot started.
 */
function peak(reqs: RecordedRequest[], latencyMs?: number): number {
  const edges = reqs.flatMap((r) => [[r.startedAt!, 1] as const, [latencyMs ? r.startedAt! + latencyMs : (r.endedAt ?? Infinity), -1] as const]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (now += d));
  return max;
}
const tagged = (s: TestStack, tag: string) => s.fake.requests.filter((r) => JSON.stringify(r.body).includes(tag));

describe.each([
  ['the API and the workers in one process (claimed at enqueue)', false, 1],
  ['the workers in a process of their own', true, 1],
  ['two worker processes', true, 2],
] as const)('default share: %s', (_, separateLanes, processes) => {
  let s: TestStack;
  let second: { pool: WorkerPool; close(): void } | undefined;
  beforeAll(async () => {
    s = await createTestStack({ env: { SYNC_WAIT_MS: '30000', WORKER_CONCURRENCY_TEXT: String(SLOTS) }, queues: ['text'], separateLanes });
    if (processes === 2) {
      // Another worker process: its own lane and connection, the same queues.
      const blocking = createRedis(TEST_REDIS_URL, { name: 'test-worker-2', patient: true });
      const pool = startWorkerPool({ ...s.workerDeps, lane: new LocalLane() }, blocking, { queues: ['text'] });
      await pool.ready();
      second = { pool, close: () => blocking.disconnect() };
    }
  });
  afterAll(async () => {
    await second?.pool.close();
    second?.close();
    await s.close();
  });
  afterEach(() => s.fake.setKnobs({}));

  const chat = (org: StackOrg, content: string) => request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: CHAT, messages: [{ role: 'user', content }] });

  it("another organization's call starts while one organization's slow calls hold every slot and more wait; each is charged once", async () => {
    const a = await s.seed({ balance: '1000' });
    const b = await s.seed({ balance: '1000' });
    s.fake.setKnobs({ latencyMs: SLOW_MS });
    // In one process a Worker's fetch may run up to its concurrency beside the jobs claimed for it (claiming-worker.ts).
    const slots = SLOTS * processes;
    const aCalls = separateLanes ? slots + 3 : 2 * slots + 3;
    const as = Array.from({ length: aCalls }, (_, i) => chat(a, `slow A-${i}`).then((r) => r));
    // Every slot held: A's calls stop reaching the provider, and some still wait.
    await waitFor("A's calls to fill the slots", () => tagged(s, 'slow A-').length >= slots);
    expect(tagged(s, 'slow A-').length).toBeLessThan(aCalls);

    const bReply = chat(b, 'next B-0').then((r) => r);
    await waitFor("B's call at the provider", () => tagged(s, 'next B-').length === 1, SLOW_MS * 2);
    // B's call reached the provider before any of A's calls ended (the old code: after the first one).
    expect(Math.min(...tagged(s, 'slow A-').map((r) => r.endedAt ?? Infinity))).toBeGreaterThan(tagged(s, 'next B-')[0]!.startedAt!);

    const [bRes, ...aRes] = await Promise.all([bReply, ...as]);
    expect(bRes!.status).toBe(200);
    expect(aRes.map((r) => r.status)).toEqual(Array(aCalls).fill(200));
    expect(tagged(s, 'slow A-')).toHaveLength(aCalls); // each once
    // The headroom was B's: A never ran more than its slots (in one process, and what its Workers' fetch adds).
    const aPeak = peak(tagged(s, 'slow A-'));
    expect(aPeak).toBeGreaterThanOrEqual(slots);
    expect(aPeak).toBeLessThanOrEqual(separateLanes ? slots : 2 * slots);

    for (const [org, n] of [[a, aCalls], [b, 1]] as const) {
      await s.settled(org.organizationId);
      const gens = await s.t.db.generation.findMany({ where: { organizationId: org.organizationId } });
      expect(gens.map((g) => g.status)).toEqual(Array(n).fill('completed'));
      const charged = gens.reduce((sum, g) => sum.plus(money(g.clientCost)), money(0));
      const held = await orgMoney(s.t.db, org.organizationId);
      expect(held.reserved.isZero()).toBe(true);
      expect(held.balance.toString()).toBe(money(1000).minus(charged).toString());
    }
  }, 60_000);

  it('an organization alone gets every slot, and never the headroom', async () => {
    const a = await s.seed({ balance: '1000' });
    s.fake.setKnobs({ latencyMs: 1000 });
    const slots = SLOTS * processes;
    const n = slots * 3 + 1;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => chat(a, `alone A-${i}`)));
    expect(answers.map((r) => r.status)).toEqual(Array(n).fill(200));
    // Its slots: the Workers' concurrency; in one process their fetch may add up to as many beside the claimed jobs.
    const most = peak(tagged(s, 'alone A-'), 1000);
    expect(most).toBeGreaterThanOrEqual(slots);
    expect(most).toBeLessThanOrEqual(separateLanes ? slots : 2 * slots);
  }, 60_000);
});
