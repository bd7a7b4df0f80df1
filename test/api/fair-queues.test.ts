import request from 'supertest';
import { money } from '../../shared/money';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitFor } from '../helpers/until';
import { orgMoney } from '../helpers/fixtures';
import type { RecordedRequest } from '../../fakes/fake-provider';

// An organization's cap on its jobs running at once (`switchyard org update --max-concurrency`, shared/queue/org-cap.ts,
// workers/services/fair-start.ts), seen from the provider.

const CHAT = STACK_MODELS.chat;

/** The most requests of `reqs` in flight at once at the fake provider. */
function peak(reqs: RecordedRequest[]): number {
  const edges = reqs.flatMap((r) => [[r.startedAt!, 1] as const, [r.endedAt ?? Infinity, -1] as const]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (now += d));
  return max;
}
const contentOf = (r: RecordedRequest) => JSON.stringify(r.body);

describe('max concurrency per organization', () => {
  let s: TestStack;
  beforeAll(async () => {
    s = await createTestStack({ env: { SYNC_WAIT_MS: '20000' } });
  });
  afterAll(() => s.close());

  const chat = (org: StackOrg, content: string) => request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: CHAT, messages: [{ role: 'user', content }] });

  it('an organization capped at 2 never runs more than 2 jobs at once; every job completes, charged once; another organization is unaffected', async () => {
    const a = await s.seed({ balance: '1000' });
    const b = await s.seed({ balance: '1000' });
    await s.t.db.organization.update({ where: { id: a.organizationId }, data: { maxConcurrency: 2 } });
    // A's calls take 600 ms (its eight end about 2.4 s after the first pair starts), B's 1 s: B's three overlap at the
    // provider as long as they reach it within a second of each other (with 300 ms for both, a busy CI machine once
    // started B's third after its first had ended), and still all answer before A's last.
    s.fake.setKnobs({ latencyMs: 300, markerLatencyMs: { 'capped A-': 300, 'free B-': 700 } });
    try {
      const order: string[] = [];
      const as = Array.from({ length: 8 }, (_, i) => chat(a, `capped A-${i}`).then((r) => (order.push('A'), r)));
      // A's eight are recorded and two of them run: B comes while A's backlog waits.
      await waitFor("A's backlog", async () => (await s.t.db.generation.count({ where: { organizationId: a.organizationId } })) === 8 && s.fake.requests.filter((r) => contentOf(r).includes('capped A-')).length >= 2);
      const bs = await Promise.all(Array.from({ length: 3 }, (_, i) => chat(b, `free B-${i}`).then((r) => (order.push('B'), r))));
      const answers = await Promise.all(as);
      expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect(bs.map((r) => r.status)).toEqual([200, 200, 200]);

      const aCalls = s.fake.requests.filter((r) => contentOf(r).includes('capped A-'));
      expect(aCalls).toHaveLength(8); // each once: a put-back called no provider
      expect(peak(aCalls)).toBe(2);
      expect(peak(s.fake.requests.filter((r) => contentOf(r).includes('free B-')))).toBe(3);
      // B waited for no job of A's: its calls reached the provider before A's third pair started (A runs 2 at a time).
      const aStarts = aCalls.map((r) => r.startedAt!).sort((x, y) => x - y);
      const bStarts = s.fake.requests.filter((r) => contentOf(r).includes('free B-')).map((r) => r.startedAt!);
      expect(Math.max(...bStarts)).toBeLessThan(aStarts[4]!);
      // And B's replies came before A's last.
      expect(order.lastIndexOf('B')).toBeLessThan(order.lastIndexOf('A'));

      await s.settled(a.organizationId);
      const gens = await s.t.db.generation.findMany({ where: { organizationId: a.organizationId } });
      expect(gens.map((g) => g.status)).toEqual(Array(8).fill('completed'));
      const charged = gens.reduce((sum, g) => sum.plus(money(g.clientCost)), money(0));
      const held = await orgMoney(s.t.db, a.organizationId);
      expect(held.reserved.isZero()).toBe(true);
      expect(held.balance.toString()).toBe(money(1000).minus(charged).toString());
      const replied = answers.reduce((sum, r) => sum.plus(money(String(r.body.usage.cost_rub))), money(0));
      expect(replied.toString()).toBe(charged.toString());
    } finally {
      s.fake.setKnobs({});
    }
  });
});
