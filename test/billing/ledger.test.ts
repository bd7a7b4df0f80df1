import { Ledger } from '../../shared/billing/ledger';
import { money } from '../../shared/money';
import { periodStart } from '../../shared/billing/periods';
import { AppError } from '../../shared/errors/app-error';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { openRow, seedKey, seedOrg, spend } from '../helpers/fixtures';

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

/** The ledger as a process has it: its group commit group-commits opens and closes on the pool (shared/runtime/bootstrap.ts). */
const processLedger = (clock?: () => Date) => new Ledger(t.db, clock, { pool: t.pool });

/** Several processes' ledgers: each group-commits its own calls, and their groups race in PostgreSQL. */
const processes = (n: number) => Array.from({ length: n }, () => processLedger());

async function reasonOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return (e as AppError).metadata?.reason ?? (e as Error).message;
  }
}

describe('Ledger under concurrency (open and close, through the group commits of several processes)', () => {
  it('lets exactly 5 of 50 concurrent opens through when the balance fits 5, and the ledger sums to the balance', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '5.000001' });
    const ledgers = processes(4);
    const ids = Array.from({ length: 50 }, genId);
    const results = await Promise.all(ids.map((id, i) => reasonOf(ledgers[i % 4].open(openRow(organizationId, id, { bound: '1' })))));
    expect(results.filter((r) => r === null)).toHaveLength(5);
    expect(results.filter((r) => r === 'balance_insufficient')).toHaveLength(45);

    const granted = ids.filter((_, i) => results[i] === null);
    const closed = await Promise.all(granted.map((id, i) => ledgers[i % 4].close({ id, status: 'completed', cost: '1' })));
    expect(closed.every((c) => c.applied && c.charged.toFixed(6) === '1.000000')).toBe(true);
    const s = await orgState(organizationId);
    expect(s.balance.toFixed(6)).toBe('0.000001');
    expect(s.reserved.toFixed(6)).toBe('0.000000');
    expect(s.spent.toFixed(6)).toBe('5.000000');
    expect(s.ledgerBalance.equals(s.balance)).toBe(true);
    expect(s.ledgerReserved.equals(s.reserved)).toBe(true);
    // A refused open records nothing.
    expect(await t.db.generation.count({ where: { organizationId } })).toBe(5);
  });

  it('never exceeds a key limit: 5 of 50 fit', async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '1000' });
    const key = await seedKey(accounts, organizationId, { limit: '2.5', reset: 'daily' });
    const ledgers = processes(4);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => reasonOf(ledgers[i % 4].open(openRow(organizationId, genId(), { apiKeyId: key.id, bound: '0.5' })))),
    );
    expect(results.filter((r) => r === null)).toHaveLength(5);
    expect(results.filter((r) => r === 'key_limit_exceeded')).toHaveLength(45);
  });

  it('never exceeds a member personal limit: 5 of 50 fit, across two keys of the member', async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '1000' });
    const member = await accounts.createUser({ organizationId, email: 'm@example.com', role: 'member', limit: '5', reset: 'monthly' });
    const k1 = await seedKey(accounts, organizationId, { userId: member.userId });
    const k2 = await seedKey(accounts, organizationId, { userId: member.userId });
    const ledgers = processes(4);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        reasonOf(ledgers[i % 4].open(openRow(organizationId, genId(), { apiKeyId: i % 2 ? k1.id : k2.id, userId: member.userId, bound: '1' }))),
      ),
    );
    expect(results.filter((r) => r === null)).toHaveLength(5);
    expect(results.filter((r) => r === 'member_limit_exceeded')).toHaveLength(45);
  });

  it('settles concurrently and repeatedly without double charging: 20 closes of one generation charge once', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '100' });
    const ledgers = processes(4);
    const id = genId();
    await ledgers[0].open(openRow(organizationId, id, { bound: '10' }));
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => ledgers[i % 4].close({ id, status: 'completed', cost: '3.3333333333' })));
    expect(outcomes.filter((o) => o.applied)).toHaveLength(1);
    expect(outcomes.find((o) => o.applied)!.charged.toFixed(10)).toBe('3.3333333333');
    expect(outcomes.filter((o) => !o.applied)).toHaveLength(19);
    // A release after the charge: the first ending stands.
    expect((await ledgers[1].close({ id, status: 'failed' })).applied).toBe(false);
    const s = await orgState(organizationId);
    expect(s.balance.toFixed(10)).toBe('96.6666666667');
    expect(s.reserved.isZero()).toBe(true);
    expect(s.ledgerBalance.equals(s.balance)).toBe(true);
    const g = await t.db.generation.findFirstOrThrow({ where: { id } });
    expect([g.status, money(g.clientCost).toFixed(10)]).toEqual(['completed', '3.3333333333']);
  });
});

describe('Ledger rules', () => {
  it('releases a failed generation in full: it costs nothing', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '10' });
    const ledger = processLedger();
    const id = genId();
    await ledger.open(openRow(organizationId, id, { bound: '4' }));
    expect((await orgState(organizationId)).reserved.toFixed(2)).toBe('4.00');
    const closed = await ledger.close({ id, status: 'failed' });
    expect([closed.applied, closed.charged.toFixed(2)]).toEqual([true, '0.00']);
    const s = await orgState(organizationId);
    expect(s.balance.toFixed(2)).toBe('10.00');
    expect(s.reserved.toFixed(2)).toBe('0.00');
  });

  it('is idempotent on open for the same generation', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '10' });
    const ledger = processLedger();
    const id = genId();
    const first = await ledger.open(openRow(organizationId, id, { bound: '4' }));
    const again = await ledger.open(openRow(organizationId, id, { bound: '4' }));
    expect([first, again].map((o) => ('granted' in o ? o.granted.toFixed(2) : o))).toEqual(['4.00', '4.00']);
    expect((await orgState(organizationId)).reserved.toFixed(2)).toBe('4.00');
  });

  it('grants less than the bound, down to the minimum, when only that fits', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '3' });
    const ledger = processLedger();
    const opened = await ledger.open(openRow(organizationId, genId(), { bound: '10', minimum: '1' }));
    expect('granted' in opened && opened.granted.toFixed(2)).toBe('3.00');
    expect(await reasonOf(ledger.open(openRow(organizationId, genId(), { bound: '10', minimum: '0.5' })))).toBe('balance_insufficient');
  });

  it('charges more than reserved only from free balance, never below zero, and records the rest as uncollected', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '5' });
    const ledger = processLedger();
    const id = genId();
    await ledger.open(openRow(organizationId, id, { bound: '2' }));
    const r = await ledger.close({ id, status: 'completed', cost: '7' });
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
    const ledger = processLedger(clock);
    await spend(ledger, organizationId, genId(), { apiKeyId: key.id, bound: '1', cost: '1' });
    now = new Date('2026-11-22T21:59:59Z');
    expect(await reasonOf(ledger.open(openRow(organizationId, genId(), { apiKeyId: key.id, bound: '0.1' })))).toBe('key_limit_exceeded');
    now = new Date('2026-11-22T22:00:00Z');
    expect(await reasonOf(ledger.open(openRow(organizationId, genId(), { apiKeyId: key.id, bound: '0.1' })))).toBeNull();
  });

  it('rolls a weekly limit on Monday 01:00 Moscow and a monthly one on the 1st', async () => {
    let now = new Date('2026-11-22T12:00:00Z'); // Sunday
    const clock = () => now;
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '100', clock });
    const weekly = await seedKey(accounts, organizationId, { limit: '1', reset: 'weekly' });
    const monthly = await seedKey(accounts, organizationId, { limit: '1', reset: 'monthly' });
    const ledger = processLedger(clock);
    for (const k of [weekly, monthly]) await spend(ledger, organizationId, genId(), { apiKeyId: k.id, bound: '1', cost: '1' });
    const fits = (k: { id: string }) => reasonOf(ledger.open(openRow(organizationId, genId(), { apiKeyId: k.id, bound: '1' })));
    now = new Date('2026-11-22T22:00:00Z'); // Monday 01:00 MSK
    expect(await fits(weekly)).toBeNull();
    expect(await fits(monthly)).toBe('key_limit_exceeded');
    now = new Date('2026-11-30T22:00:00Z'); // 1 December 01:00 MSK
    expect(await fits(monthly)).toBeNull();
  });

  it('refuses a top-up of an unknown organization', async () => {
    expect(await processLedger().topUp('org_missing', '1')).toBeNull();
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
