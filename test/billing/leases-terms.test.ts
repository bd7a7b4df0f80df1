import request from 'supertest';
import { Ledger, type DrawnRow } from '../../shared/billing/ledger';
import { LeaseDesk } from '../../shared/billing/leases';
import { money, ZERO, type Decimal } from '../../shared/money';
import { createLogger } from '../../shared/logger';
import { audit } from '../faults/helpers/audit';
import { seedKey, seedOrg } from '../helpers/fixtures';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitFor, waitUntil } from '../helpers/until';

// New terms for a key while requests drawn from its leases run (docs/architecture.md "Leases", item 6): a request
// granted from a lease before its process learned of the new terms had its money reserved under the old ones, and a
// reply that showed a cost is charged that cost (decisions.md section 4), however the key's limit moves meanwhile.

const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });

describe("a member toggling its own key's limit during a burst on it", () => {
  let s: TestStack;
  let org: StackOrg;
  beforeAll(async () => {
    s = await createTestStack({ env: { LEASE_REQUESTS: '32' } });
    org = await s.seed({ balance: '100000' });
  });
  afterAll(() => s.close());

  it('makes no answer free: every reply that showed a cost is charged that cost, once, and the balance drops by their sum', async () => {
    const member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'member@example.com', role: 'member' });
    const created = await request(s.app).post('/v1/keys').set(bearer(member.token)).send({ name: 'own', rate_limit_per_minute: 0 });
    expect(created.status).toBe(201);
    const key = created.body as { id: string; key: string };
    const patch = (body: object) => request(s.app).patch(`/v1/keys/${key.id}`).set(bearer(member.token)).send(body);
    const before = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });

    const replies: Array<{ id: string; shown: number }> = [];
    let refused = 0;
    let bursting = true;
    const clients = Array.from({ length: 24 }, async (_, c) => {
      for (let i = 0; bursting; i++) {
        const r = await request(s.app).post('/v1/chat/completions').set(bearer(key.key)).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: `c${c} ${i}` }] });
        // A request while the limit is 0 is refused; none may fail otherwise.
        if (r.status === 402 || r.status === 403) {
          refused++;
          continue;
        }
        expect(r.status).toBe(200);
        replies.push({ id: r.body.id, shown: (r.body.usage as { cost_rub: number }).cost_rub });
      }
    });
    // Requests granted from a lease so far (their reserve entries move no money: the lease's did).
    const drawnSoFar = async () =>
      (await s.t.pool.query(`SELECT COUNT(*)::int AS n FROM ledger_entries WHERE kind = 'reserve' AND reserved_delta = 0 AND api_key_id = $1`, [key.id])).rows[0].n as number;
    // Twelve toggles at least, and on until enough requests were answered, and drawn from leases, to make the race
    // likely (what the assertions below ask). Each toggle waits for the burst: the limit at 0 until a request is refused
    // (the leases revoked), then lifted until eight more replies came (leases taken and drawn from again).
    for (let t = 0; t < 12 || replies.length <= 100 || (await drawnSoFar()) <= 40; t++) {
      const [answered, turnedAway] = [replies.length, refused];
      expect((await patch({ limit: 0, limit_reset: 'never' })).status).toBe(200);
      await waitFor('a request refused under the limit of 0', () => refused > turnedAway, 20_000);
      expect((await patch({ limit: null })).status).toBe(200);
      await waitFor('eight more replies', () => replies.length >= answered + 8, 20_000);
    }
    bursting = false;
    await Promise.all(clients);
    await s.settled(org.organizationId);
    await waitUntil(async () => ((await s.t.pool.query(`SELECT 1 FROM reservations WHERE status = 'held'`)).rowCount === 0 ? true : undefined));

    expect(replies.length).toBeGreaterThan(100);
    // Many were granted from a lease (their reserve entries move no money: the lease's did).
    const drawn = (await s.t.pool.query(`SELECT COUNT(*)::int AS n FROM ledger_entries WHERE kind = 'reserve' AND reserved_delta = 0 AND generation_id = ANY ($1)`, [replies.map((r) => r.id)])).rows[0].n;
    expect(drawn).toBeGreaterThan(20);
    const rows = (
      await s.t.pool.query(
        `SELECT g.id, g.status::text AS status, g.client_cost::text AS cost, r.charged::text AS charged, r.uncollected::text AS uncollected
           FROM generations g JOIN reservations r ON r.generation_id = g.id WHERE g.id = ANY ($1)`,
        [replies.map((r) => r.id)],
      )
    ).rows as Array<{ id: string; status: string; cost: string; charged: string | null; uncollected: string | null }>;
    const byId = new Map(rows.map((g) => [g.id, g]));
    const wrong: string[] = [];
    let sum = ZERO;
    for (const { id, shown } of replies) {
      const g = byId.get(id);
      const charged = money(g?.charged ?? 0);
      sum = sum.plus(charged);
      if (!g || g.status !== 'completed' || charged.toFixed(6) !== money(shown).toFixed(6) || money(g.uncollected ?? 0).greaterThan(0)) {
        wrong.push(`${id}: showed ${shown}, ${g ? `${g.status}, charged ${g.charged}, uncollected ${g.uncollected}` : 'not recorded'}`);
      }
    }
    expect(wrong).toEqual([]);
    const after = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    expect(money(before.balance).minus(money(after.balance)).toFixed(10)).toBe(sum.toFixed(10));
    expect((await audit(s.t.db)).problems).toEqual([]);
  }, 120_000);
});

describe('a lease revoked by another process (the ledger, real PostgreSQL)', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb();
  });
  afterAll(() => t.drop());

  it('keeps what its process drew before it knew: those requests hold and are charged their bounds; the rest is given back at its next renewal', async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '100' });
    const key = await seedKey(accounts, organizationId, { limit: '50', reset: 'never' });
    const ledger = new Ledger(t.db, undefined, { pool: t.pool });
    const desk = new LeaseDesk(ledger, { requests: 8, headroom: 1, idleMs: 150, ttlMs: 5_000, maxAgeMs: 60_000 }, createLogger({ silent: !process.env.TEST_LOGS }));
    const owner = { organizationId, apiKeyId: key.id, userId: null };
    const bound = money(1);
    const draw = () => waitUntil(async () => desk.draw(owner, bound) ?? undefined);
    const row = (id: string, lease: string): DrawnRow => ({
      id, lease, organization_id: organizationId, api_key_id: key.id, user_id: null, bound: bound.toFixed(10), minimum: bound.toFixed(10),
      model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync',
    });
    try {
      // Two requests granted in memory from the lease; their records are still to commit when the key's limit is
      // lowered through another process (this AccountsService tells no lease desk).
      const lease = await draw();
      expect(await draw()).toBe(lease);
      await accounts.updateKey(key.id, { limit: '20', reset: 'never' });
      const granted: Decimal[] = [];
      for (const id of ['gen_a', 'gen_b']) {
        granted.push(await ledger.openDrawn(row(id, lease)));
        desk.opened(lease, granted[granted.length - 1]);
      }
      expect(granted.map((g) => g.toFixed(2))).toEqual(['1.00', '1.00']);
      for (const id of ['gen_a', 'gen_b']) expect((await ledger.close({ id, status: 'completed', cost: '1' })).charged.toFixed(2)).toBe('1.00');
      // At its next renewal the process learns the lease is revoked, draws nothing more from it and gives the rest back.
      await waitUntil(async () => ((await t.pool.query(`SELECT status::text AS status FROM reservations WHERE generation_id = $1`, [lease])).rows[0].status === 'released' ? true : undefined));
      const l = (await t.pool.query(`SELECT amount::text AS amount, charged::text AS charged FROM reservations WHERE generation_id = $1`, [lease])).rows[0];
      expect(money(l.charged).isZero()).toBe(true);
      expect(money(l.amount).toFixed(2)).toBe(money(8 - 2).toFixed(2));
      const k = await t.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
      expect(money(k.usage).toFixed(2)).toBe('2.00');
      expect(money(k.reserved).isZero()).toBe(true);
    } finally {
      await desk.close();
    }
    expect((await audit(t.db)).problems).toEqual([]);
  });
});
