import { Ledger } from '../../shared/billing/ledger';
import { money } from '../../shared/money';
import { periodStart } from '../../shared/billing/periods';
import { AppError } from '../../shared/errors/app-error';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { seedKey, seedOrg } from '../helpers/fixtures';

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => {
  await t.drop();
});

let seq = 0;
const genId = () => `gen_test_${++seq}_${Date.now()}`;

async function orgState(orgId: string) {
  const o = await t.db.organization.findUniqueOrThrow({ where: { id: orgId } });
  const sums = await t.db.$queryRaw<Array<{ amount: string; reserved: string }>>`
    SELECT COALESCE(SUM(amount), 0)::text AS amount, COALESCE(SUM(reserved_delta), 0)::text AS reserved
    FROM ledger_entries WHERE organization_id = ${orgId}`;
  return { balance: money(o.balance), reserved: money(o.reserved), spent: money(o.spent), ledgerBalance: money(sums[0].amount), ledgerReserved: money(sums[0].reserved) };
}

async function reasonOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return (e as AppError).metadata?.reason ?? (e as Error).message;
  }
}

describe('Ledger under concurrency', () => {
  it('lets exactly 5 of 50 concurrent reservations through when the balance fits 5, and the ledger sums to the balance', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '5.000001' });
    const ledger = new Ledger(t.db);
    const ids = Array.from({ length: 50 }, genId);
    const results = await Promise.all(ids.map((id) => reasonOf(ledger.reserve({ generationId: id, organizationId, amount: '1' }))));
    expect(results.filter((r) => r === null)).toHaveLength(5);
    expect(results.filter((r) => r === 'balance_insufficient')).toHaveLength(45);

    const granted = ids.filter((_, i) => results[i] === null);
    await Promise.all(granted.map((id) => ledger.charge(id, '1')));
    const s = await orgState(organizationId);
    expect(s.balance.toFixed(6)).toBe('0.000001');
    expect(s.reserved.toFixed(6)).toBe('0.000000');
    expect(s.spent.toFixed(6)).toBe('5.000000');
    expect(s.ledgerBalance.equals(s.balance)).toBe(true);
    expect(s.ledgerReserved.equals(s.reserved)).toBe(true);
  });

  it('never exceeds a key limit: 5 of 50 fit', async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '1000' });
    const key = await seedKey(accounts, organizationId, { limit: '2.5', reset: 'daily' });
    const ledger = new Ledger(t.db);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => reasonOf(ledger.reserve({ generationId: genId(), organizationId, apiKeyId: key.id, amount: '0.5' }))),
    );
    expect(results.filter((r) => r === null)).toHaveLength(5);
    expect(results.filter((r) => r === 'key_limit_exceeded')).toHaveLength(45);
  });

  it('never exceeds a member personal limit: 5 of 50 fit, across two keys of the member', async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '1000' });
    const member = await accounts.createUser({ organizationId, email: 'm@example.com', role: 'member', limit: '5', reset: 'monthly' });
    const k1 = await seedKey(accounts, organizationId, { userId: member.userId });
    const k2 = await seedKey(accounts, organizationId, { userId: member.userId });
    const ledger = new Ledger(t.db);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        reasonOf(ledger.reserve({ generationId: genId(), organizationId, apiKeyId: i % 2 ? k1.id : k2.id, userId: member.userId, amount: '1' })),
      ),
    );
    expect(results.filter((r) => r === null)).toHaveLength(5);
    expect(results.filter((r) => r === 'member_limit_exceeded')).toHaveLength(45);
  });

  it('settles concurrently and repeatedly without double charging', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '100' });
    const ledger = new Ledger(t.db);
    const id = genId();
    await ledger.reserve({ generationId: id, organizationId, amount: '10' });
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => ledger.charge(id, '3.3333333333')));
    expect(outcomes.filter((o) => o.outcome === 'charged')).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === 'already_settled')).toHaveLength(19);
    expect((await ledger.release(id)).outcome).toBe('already_settled');
    const s = await orgState(organizationId);
    expect(s.balance.toFixed(10)).toBe('96.6666666667');
    expect(s.reserved.isZero()).toBe(true);
    expect(s.ledgerBalance.equals(s.balance)).toBe(true);
  });
});

describe('Ledger rules', () => {
  it('releases a failed generation in full: it costs nothing', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '10' });
    const ledger = new Ledger(t.db);
    const id = genId();
    await ledger.reserve({ generationId: id, organizationId, amount: '4' });
    expect((await orgState(organizationId)).reserved.toFixed(2)).toBe('4.00');
    expect(await ledger.release(id)).toMatchObject({ outcome: 'released' });
    const s = await orgState(organizationId);
    expect(s.balance.toFixed(2)).toBe('10.00');
    expect(s.reserved.toFixed(2)).toBe('0.00');
  });

  it('is idempotent on reserve for the same generation', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '10' });
    const ledger = new Ledger(t.db);
    const id = genId();
    await ledger.reserve({ generationId: id, organizationId, amount: '4' });
    await ledger.reserve({ generationId: id, organizationId, amount: '4' });
    expect((await orgState(organizationId)).reserved.toFixed(2)).toBe('4.00');
  });

  it('grants less than the bound, down to the minimum, when only that fits', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '3' });
    const ledger = new Ledger(t.db);
    const granted = await ledger.reserve({ generationId: genId(), organizationId, amount: '10', minimum: '1' });
    expect(granted.toFixed(2)).toBe('3.00');
    expect(await reasonOf(ledger.reserve({ generationId: genId(), organizationId, amount: '10', minimum: '0.5' }))).toBe('balance_insufficient');
  });

  it('charges more than reserved only from free balance, never below zero, and records the rest as uncollected', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '5' });
    const ledger = new Ledger(t.db);
    const id = genId();
    await ledger.reserve({ generationId: id, organizationId, amount: '2' });
    const r = await ledger.charge(id, '7');
    expect(r.charged.toFixed(2)).toBe('5.00');
    const s = await orgState(organizationId);
    expect(s.balance.toFixed(2)).toBe('0.00');
    const res = await t.db.reservation.findUniqueOrThrow({ where: { generationId: id } });
    expect(money(res.uncollected).toFixed(2)).toBe('2.00');
  });

  it('rolls a daily key limit over at 01:00 Moscow time (22:00 UTC)', async () => {
    let now = new Date('2026-11-22T21:00:00Z');
    const clock = () => now;
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '100', clock });
    const key = await seedKey(accounts, organizationId, { limit: '1', reset: 'daily' });
    const ledger = new Ledger(t.db, clock);
    const first = genId();
    await ledger.reserve({ generationId: first, organizationId, apiKeyId: key.id, amount: '1' });
    await ledger.charge(first, '1');
    now = new Date('2026-11-22T21:59:59Z');
    expect(await reasonOf(ledger.reserve({ generationId: genId(), organizationId, apiKeyId: key.id, amount: '0.1' }))).toBe('key_limit_exceeded');
    now = new Date('2026-11-22T22:00:00Z');
    expect(await reasonOf(ledger.reserve({ generationId: genId(), organizationId, apiKeyId: key.id, amount: '0.1' }))).toBeNull();
  });

  it('rolls a weekly limit on Monday 01:00 Moscow and a monthly one on the 1st', async () => {
    let now = new Date('2026-11-22T12:00:00Z'); // Sunday
    const clock = () => now;
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '100', clock });
    const weekly = await seedKey(accounts, organizationId, { limit: '1', reset: 'weekly' });
    const monthly = await seedKey(accounts, organizationId, { limit: '1', reset: 'monthly' });
    const ledger = new Ledger(t.db, clock);
    for (const k of [weekly, monthly]) {
      const id = genId();
      await ledger.reserve({ generationId: id, organizationId, apiKeyId: k.id, amount: '1' });
      await ledger.charge(id, '1');
    }
    now = new Date('2026-11-22T22:00:00Z'); // Monday 01:00 MSK
    expect(await reasonOf(ledger.reserve({ generationId: genId(), organizationId, apiKeyId: weekly.id, amount: '1' }))).toBeNull();
    expect(await reasonOf(ledger.reserve({ generationId: genId(), organizationId, apiKeyId: monthly.id, amount: '1' }))).toBe('key_limit_exceeded');
    now = new Date('2026-11-30T22:00:00Z'); // 1 December 01:00 MSK
    expect(await reasonOf(ledger.reserve({ generationId: genId(), organizationId, apiKeyId: monthly.id, amount: '1' }))).toBeNull();
  });

  it('refuses a top-up of an unknown organization', async () => {
    expect(await new Ledger(t.db).topUp('org_missing', '1')).toBeNull();
  });
});

describe('sy_period_start agrees with periodStart', () => {
  it('for 200 random instants and every period', async () => {
    const base = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 200; i++) {
      const at = new Date(base + Math.floor(Math.random() * 730 * 86_400_000));
      for (const reset of ['daily', 'weekly', 'monthly'] as const) {
        const rows = await t.db.$queryRaw<Array<{ s: Date }>>`SELECT sy_period_start(${reset}::"LimitReset", ${at}::timestamptz) AS s`;
        expect(rows[0].s.toISOString()).toBe(periodStart(reset, at).toISOString());
      }
    }
  });
});
