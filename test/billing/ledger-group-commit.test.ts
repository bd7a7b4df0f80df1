import { Ledger, type CloseRow, type LedgerOptions, type OpenRow } from '../../shared/billing/ledger';
import { AppError } from '../../shared/errors/app-error';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { seedKey, seedOrg } from '../helpers/fixtures';
import { waitFor } from '../helpers/until';

// The set-based group commit (sy_ledger_group, migration set_based_ledger_batches) against the single-item path (sy_reserve and
// sy_settle): since the migration one_money_body both are the one body, sy_ledger_apply, for one item.

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => {
  await t.drop();
});

const NOW = new Date('2026-11-20T12:00:00Z');

/** An organization with a member (monthly limit 6) who owns key k1 (daily limit 4, spend left from yesterday) and the limitless key k2. */
async function account(balance: string) {
  const { accounts, organizationId } = await seedOrg(t.db, { balance });
  const member = await accounts.createUser({ organizationId, email: `m@${organizationId.toLowerCase()}.example.com`, role: 'member', limit: '6', reset: 'monthly' });
  const k1 = await seedKey(accounts, organizationId, { userId: member.userId, limit: '4', reset: 'daily' });
  const k2 = await seedKey(accounts, organizationId, { userId: member.userId });
  // Yesterday's spend: a stale period counts as zero, and the first money call of today starts a new one.
  await t.pool.query(`UPDATE api_keys SET period_spent = 3, period_start = '2026-11-18T22:00:00Z' WHERE id = $1`, [k1.id]);
  return { organizationId, userId: member.userId, k1: k1.id, k2: k2.id };
}
type Account = Awaited<ReturnType<typeof account>>;

/** Everything money-related of an account, with generation ids reduced to their suffix so two accounts compare. */
async function state(a: Account, prefix: string) {
  const q = async (text: string, params: unknown[]) => (await t.pool.query(text, params)).rows;
  const [org] = await q('SELECT balance::text, reserved::text, spent::text FROM organizations WHERE id = $1', [a.organizationId]);
  const keys = await q(
    `SELECT reserved::text, usage::text, period_spent::text, period_start FROM api_keys WHERE id = ANY ($1) ORDER BY id = $2 DESC`,
    [[a.k1, a.k2], a.k1],
  );
  const users = await q('SELECT reserved::text, period_spent::text, period_start FROM users WHERE id = $1', [a.userId]);
  const reservations = await q(
    `SELECT substr(generation_id, $2::int) AS id, amount::text, charged::text, uncollected::text, status
       FROM reservations WHERE organization_id = $1 ORDER BY 1`,
    [a.organizationId, prefix.length + 1],
  );
  const ledger = await q(
    `SELECT substr(generation_id, $2::int) AS id, kind, amount::text, reserved_delta::text
       FROM ledger_entries WHERE organization_id = $1 AND generation_id IS NOT NULL ORDER BY 1, 2`,
    [a.organizationId, prefix.length + 1],
  );
  return { org, keys, users, reservations, ledger };
}

/** A tiny deterministic generator: the same sequence on every run. */
function rng(seed: number) {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
}
const amount = (x: number) => x.toFixed(4);

/** Runs `sql` in a transaction of its own that counts function calls: its rows, and how often the one body (sy_ledger_apply) ran. */
async function countingApplies(sql: string, params: unknown[]) {
  const c = await t.pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(`SET LOCAL track_functions = 'pl'`);
    // The backend's pending counts (not yet flushed) span earlier transactions too: a difference.
    const count = async () => (await c.query(`SELECT COALESCE(pg_stat_get_xact_function_calls('sy_ledger_apply'::regproc), 0)::int AS n`)).rows[0].n as number;
    const before = await count();
    const rows = (await c.query(sql, params)).rows;
    const applies = (await count()) - before;
    await c.query('COMMIT');
    return { rows, applies };
  } finally {
    c.release();
  }
}

interface OpenItem { n: number; key: 'k1' | 'k2' | null; bound: string; minimum: string }
interface CloseItem { n: number; cost: string | null }

describe('sy_ledger_group', () => {
  it('grants, refuses, charges and releases exactly as sy_reserve / sy_settle one by one, round after round', async () => {
    // The same sequence on two identical accounts: A in one group per round, B one call per item in the group's
    // order (closes first, then opens, each by generation id).
    const A = await account('10');
    const B = await account('10');
    const random = rng(42);
    let next = 0;
    const held: number[] = [];
    const settled: number[] = [];
    const id = (prefix: string, n: number) => `${prefix}${String(n).padStart(4, '0')}`;
    const seen = new Set<string>();

    for (let round = 0; round < 12; round++) {
      const closes: CloseItem[] = [];
      for (const n of held.splice(0, Math.floor(random() * 5))) {
        const r = random();
        closes.push({ n, cost: r < 0.25 ? null : amount(r * 2.5) });
      }
      // A generation that never reserved (not_found) and one settled before (already_settled).
      closes.push({ n: 9000 + round, cost: '0.1' });
      if (settled.length) closes.push({ n: settled[Math.floor(random() * settled.length)], cost: '0.3' });
      const opens: OpenItem[] = [];
      for (let i = 0; i < 6; i++) {
        const bound = 0.2 + random() * 2;
        const r = random();
        opens.push({ n: ++next, key: r < 0.45 ? 'k1' : r < 0.9 ? 'k2' : null, bound: amount(bound), minimum: amount(bound * random()) });
      }
      // An open whose reservation already exists answers it and changes nothing.
      if (held.length) opens.push({ n: held[0], key: 'k2', bound: '1', minimum: '1' });
      const closedNow = new Set(closes.map((c) => c.n));
      const openRow = (a: Account, prefix: string, o: OpenItem) => ({
        id: id(prefix, o.n), organization_id: a.organizationId, api_key_id: o.key && a[o.key], user_id: o.key ? a.userId : null,
        bound: o.bound, minimum: o.minimum, model: 'm', unified_model_id: 'm', request_type: 'chat',
        api_type: 'chat_completions', response_mode: 'sync', request: {},
      });
      const closeRow = (prefix: string, c: CloseItem) => ({ id: id(prefix, c.n), status: 'completed', ...(c.cost === null ? {} : { cost: c.cost }) });

      const group = (
        await t.pool.query(
          `SELECT kind, id, granted::text, reason, outcome, charged::text FROM sy_ledger_group($1::jsonb, $2::jsonb, $3)`,
          [JSON.stringify(opens.filter((o) => !closedNow.has(o.n)).map((o) => openRow(A, 'a', o))), JSON.stringify(closes.map((c) => closeRow('a', c))), NOW],
        )
      ).rows;
      const fromGroup = new Map(group.map((r) => [`${r.kind}:${r.id.slice(1)}`, r.kind === 'open' ? [r.granted, r.reason] : [r.outcome, r.charged]]));

      const one = new Map<string, unknown[]>();
      for (const c of [...closes].sort((x, y) => x.n - y.n)) {
        const [r] = (await t.pool.query(`SELECT outcome, charged::text FROM sy_settle($1, $2, $3, $4)`, [id('b', c.n), c.cost ?? '0', c.cost === null, NOW])).rows;
        one.set(`close:${id('', c.n)}`, [r.outcome, r.charged]);
      }
      for (const o of [...opens].filter((x) => !closedNow.has(x.n)).sort((x, y) => x.n - y.n)) {
        const row = openRow(B, 'b', o);
        const [r] = (
          await t.pool.query(`SELECT granted::text, reason FROM sy_reserve($1, $2, $3, $4, $5, $6, $7)`, [row.id, row.organization_id, row.api_key_id, row.user_id, o.bound, o.minimum, NOW])
        ).rows;
        one.set(`open:${id('', o.n)}`, [r.granted, r.reason]);
      }
      expect(fromGroup).toEqual(one);
      for (const [key, [a, b]] of one) {
        if (key.startsWith('close:')) seen.add(String(a));
        else if (b !== null) seen.add(String(b));
        else if (opens.some((o) => `open:${id('', o.n)}` === key && Number(o.bound) > Number(a))) seen.add('shrunk');
      }
      expect(await state(A, 'a')).toEqual(await state(B, 'b'));

      for (const c of closes) if (c.n < 9000 && !settled.includes(c.n)) settled.push(c.n);
      for (const o of opens) if (fromGroup.get(`open:${id('', o.n)}`)?.[1] === null && !held.includes(o.n) && !closedNow.has(o.n)) held.push(o.n);
    }
    // The sequence did exercise every rule.
    expect([...seen].sort()).toEqual(
      ['already_settled', 'balance_insufficient', 'charged', 'key_limit_exceeded', 'member_limit_exceeded', 'not_found', 'released', 'shrunk'].sort(),
    );
    const s = await state(A, 'a');
    expect(s.reservations.some((r) => Number(r.uncollected) > 0)).toBe(true);
    expect(s.reservations.some((r) => Number(r.charged) > Number(r.amount))).toBe(true);
  });

  it('shrinks and then refuses the later opens of one group once the balance runs out, in generation id order', async () => {
    const a = await account('2.5');
    const opens = ['g1', 'g2', 'g3', 'g4'].map((id) => ({ id: `${a.organizationId}_${id}`, organization_id: a.organizationId, bound: '1', minimum: '0.4', model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync' }));
    const rows = (await t.pool.query(`SELECT id, granted::text, reason FROM sy_ledger_group($1::jsonb, '[]', $2)`, [JSON.stringify([...opens].reverse()), NOW])).rows;
    expect(rows.map((r) => [r.id.slice(-2), Number(r.granted), r.reason])).toEqual([
      ['g1', 1, null],
      ['g2', 1, null],
      ['g3', 0.5, null],
      ['g4', 0, 'balance_insufficient'],
    ]);
    const gens = (await t.pool.query(`SELECT id, reserved_amount::float AS r FROM generations WHERE organization_id = $1 ORDER BY id`, [a.organizationId])).rows;
    expect(gens.map((g) => [g.id.slice(-2), g.r])).toEqual([['g1', 1], ['g2', 1], ['g3', 0.5]]);
  });

  it('applies the closes first: money a close frees is there for the opens of the same group', async () => {
    const a = await account('1');
    const base = { organization_id: a.organizationId, model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync' };
    await t.pool.query(`SELECT * FROM sy_ledger_group($1::jsonb, '[]', $2)`, [JSON.stringify([{ ...base, id: `${a.organizationId}_old`, bound: '1', minimum: '1' }]), NOW]);
    const rows = (
      await t.pool.query(`SELECT kind, id, granted::text, reason, outcome, charged::text, applied FROM sy_ledger_group($1::jsonb, $2::jsonb, $3)`, [
        JSON.stringify([{ ...base, id: `${a.organizationId}_new`, bound: '1', minimum: '0.5' }]),
        JSON.stringify([{ id: `${a.organizationId}_old`, status: 'completed', cost: '0.25' }]),
        NOW,
      ])
    ).rows;
    expect(rows.map((r) => [r.kind, Number(r.granted ?? r.charged), r.reason ?? r.outcome, r.applied])).toEqual([
      ['close', 0.25, 'charged', true],
      ['open', 0.75, null, null],
    ]);
    const [org] = (await t.pool.query(`SELECT balance::float, reserved::float, spent::float FROM organizations WHERE id = $1`, [a.organizationId])).rows;
    expect(org).toEqual({ balance: 0.75, reserved: 0.75, spent: 0.25 });
  });

  it('keeps the money rules in one body: sy_reserve, sy_settle and every group run sy_ledger_apply, and no other function moves money', async () => {
    const a = await account('5');
    const base = { model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync' };
    const open = { ...base, organization_id: a.organizationId, id: `${a.organizationId}_one`, bound: '1', minimum: '1' };
    const calls = [
      await countingApplies(`SELECT * FROM sy_reserve($1, $2, NULL, NULL, 1, 1, $3)`, [`${a.organizationId}_lease`, a.organizationId, NOW]),
      await countingApplies(`SELECT * FROM sy_settle($1, 0, true, $2)`, [`${a.organizationId}_lease`, NOW]),
      // The smallest group, one close and one open of one organization, which a fast path of its own used to take.
      await countingApplies(`SELECT * FROM sy_ledger_group($1::jsonb, $2::jsonb, $3)`, [JSON.stringify([open]), JSON.stringify([{ id: `${a.organizationId}_none`, status: 'failed' }]), NOW]),
    ];
    expect(calls.map((c) => c.applies)).toEqual([1, 1, 1]);
    expect(calls[0]!.rows).toEqual([{ granted: '1', reason: null }]);
    expect(calls[1]!.rows).toEqual([{ outcome: 'released', charged: '0' }]);
    // A lease's reservation has no generation: neither its open nor its close wrote one.
    expect((await t.pool.query(`SELECT count(*)::int AS n FROM generations WHERE id = $1`, [`${a.organizationId}_lease`])).rows[0].n).toBe(0);
    // The writers of balances, reservations held and spending: the one body, and a top-up.
    const { rows } = await t.pool.query(
      `SELECT proname FROM pg_proc WHERE proname LIKE 'sy\\_%' AND prosrc ~ '\\m(reserved|balance|spent|period_spent)\\s*=' ORDER BY 1`,
    );
    expect(rows.map((r) => r.proname)).toEqual(['sy_ledger_apply', 'sy_topup']);
  });

  it('runs a close and an open of two organizations the set-based way (both organizations locked in id order)', async () => {
    const a = await account('5');
    const b = await account('5');
    const base = { model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync' };
    await t.pool.query(`SELECT * FROM sy_ledger_group($1::jsonb, '[]', $2)`, [JSON.stringify([{ ...base, organization_id: a.organizationId, id: `${a.organizationId}_x`, bound: '1', minimum: '1' }]), NOW]);
    const { rows, applies } = await countingApplies(`SELECT kind, outcome, reason FROM sy_ledger_group($1::jsonb, $2::jsonb, $3)`, [
      JSON.stringify([{ ...base, organization_id: b.organizationId, id: `${b.organizationId}_y`, bound: '1', minimum: '1' }]),
      JSON.stringify([{ id: `${a.organizationId}_x`, status: 'completed', cost: '0.5' }]),
      NOW,
    ]);
    expect(rows.map((r) => [r.kind, r.outcome ?? r.reason])).toEqual([
      ['close', 'charged'],
      ['open', null],
    ]);
    expect(applies).toBe(1);
  });

  it('refuses a group that names one generation twice (the group commit never sends one)', async () => {
    const a = await account('10');
    const open = { id: `${a.organizationId}_x`, organization_id: a.organizationId, bound: '1', minimum: '1', model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync' };
    await expect(t.pool.query(`SELECT * FROM sy_ledger_group($1::jsonb, $2::jsonb, $3)`, [JSON.stringify([open]), JSON.stringify([{ id: open.id, status: 'failed' }]), NOW])).rejects.toThrow(
      /appears more than once/,
    );
    await expect(t.pool.query(`SELECT * FROM sy_ledger_group($1::jsonb, '[]', $2)`, [JSON.stringify([open, open]), NOW])).rejects.toThrow(/appears more than once/);
    expect((await t.pool.query(`SELECT count(*)::int AS n FROM reservations WHERE organization_id = $1`, [a.organizationId])).rows[0].n).toBe(0);
  });
});

describe('Ledger: one group commit for opens and closes', () => {
  /** The ledger on the test pool, with every sy_ledger_group call's opens and closes recorded. */
  function recordingLedger(opts: Omit<LedgerOptions, 'pool'> = {}) {
    const calls: Array<{ opens: string[]; closes: string[] }> = [];
    const pool = t.pool;
    const spy = {
      query: (text: string, params: unknown[]) => {
        if (text.includes('sy_ledger_group')) {
          calls.push({ opens: JSON.parse(params[0] as string).map((r: OpenRow) => r.id), closes: JSON.parse(params[1] as string).map((r: CloseRow) => r.id) });
        }
        return pool.query(text, params);
      },
    };
    return { calls, ledger: new Ledger(t.db, () => NOW, { ...opts, pool: spy as unknown as typeof pool }) };
  }
  const openRow = (organizationId: string, id: string, bound = '1', minimum = bound): OpenRow => ({
    id, organization_id: organizationId, bound, minimum, model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync',
  });

  it("carries one request's open and another's close in one transaction, with the right answer for each", async () => {
    const a = await account('100');
    const { calls, ledger } = recordingLedger();
    const first = Array.from({ length: 6 }, (_, i) => `${a.organizationId}_first_${i}`);
    await Promise.all(first.map((id) => ledger.open(openRow(a.organizationId, id))));
    calls.length = 0;
    const second = Array.from({ length: 6 }, (_, i) => `${a.organizationId}_second_${i}`);
    const [closed, opened] = await Promise.all([
      Promise.all(first.map((id) => ledger.close({ id, status: 'completed', cost: '0.5', model: 'm' }))),
      Promise.all(second.map((id) => ledger.open(openRow(a.organizationId, id)))),
    ]);
    expect(calls.some((c) => c.opens.length > 0 && c.closes.length > 0)).toBe(true);
    expect(closed.map((c) => [c.applied, c.charged.toFixed(2)])).toEqual(Array(6).fill([true, '0.50']));
    expect(opened.map((o) => ('granted' in o ? o.granted.toFixed(2) : o))).toEqual(Array(6).fill('1.00'));
    const [org] = (await t.pool.query(`SELECT balance::text, reserved::text, spent::text FROM organizations WHERE id = $1`, [a.organizationId])).rows;
    expect(org).toEqual({ balance: '97.0000000000', reserved: '6.0000000000', spent: '3.0000000000' });
  });

  it('never puts the open and the close of one generation in one group', async () => {
    const a = await account('100');
    const { calls, ledger } = recordingLedger();
    const x = `${a.organizationId}_x`;
    // The first open goes out at once; the next three queue behind it, and the close of x must wait for a group of its own.
    const results = await Promise.all([
      ledger.open(openRow(a.organizationId, `${a.organizationId}_y`)),
      ledger.open(openRow(a.organizationId, x)),
      ledger.close({ id: x, status: 'completed', cost: '0.2' }),
      ledger.open(openRow(a.organizationId, `${a.organizationId}_z`)),
    ]);
    for (const c of calls) expect(c.opens.includes(x) && c.closes.includes(x)).toBe(false);
    expect(calls).toEqual([
      { opens: [`${a.organizationId}_y`], closes: [] },
      { opens: [x, `${a.organizationId}_z`], closes: [] },
      { opens: [], closes: [x] },
    ]);
    expect(results[2]).toMatchObject({ applied: true });
  });

  it('an open does not queue behind a close committing alone: its transaction starts beside it and waits on the row in PostgreSQL', async () => {
    const a = await account('100');
    const { calls, ledger } = recordingLedger();
    const x = `${a.organizationId}_x`;
    const y = `${a.organizationId}_y`;
    await ledger.open(openRow(a.organizationId, x));
    // The organization row locked from outside: whatever reaches it waits there.
    const blocker = await t.pool.connect();
    const waiting = async () =>
      (await t.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%sy_ledger_group%'`)).rows[0].n as number;
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [a.organizationId]);
      // A close whose reply went out, committing alone, stuck on the row.
      const closed = ledger.close({ id: x, status: 'completed', cost: '0.25' }, { background: true });
      await waitFor('the close waiting on the row', async () => (await waiting()) >= 1);
      expect(calls).toEqual([{ opens: [x], closes: [] }, { opens: [], closes: [x] }]);
      // The next request's open goes out at once, in a transaction of its own beside the close's.
      const opened = ledger.open(openRow(a.organizationId, y));
      await waitFor('the open waiting beside it', async () => (await waiting()) >= 2);
      expect(await waiting()).toBe(2);
      expect(calls.slice(2)).toEqual([{ opens: [y], closes: [] }]);
      await blocker.query('COMMIT');
      expect(await closed).toMatchObject({ applied: true });
      expect((await opened as { granted: { toFixed(n: number): string } }).granted.toFixed(2)).toBe('1.00');
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      blocker.release();
    }
    const [org] = (await t.pool.query(`SELECT balance::text, reserved::text, spent::text FROM organizations WHERE id = $1`, [a.organizationId])).rows;
    expect(org).toEqual({ balance: '99.7500000000', reserved: '1.0000000000', spent: '0.2500000000' });
  });

  it('two processes group-committing opens and closes of the same two organizations neither deadlock nor lose a cent', async () => {
    const a = await account('30');
    const b = await account('30');
    // Two ledgers: two group commits, as two API/worker processes; each group locks both organizations, in id order.
    const ledgers = [new Ledger(t.db, () => NOW, { pool: t.pool }), new Ledger(t.db, () => NOW, { pool: t.pool })];
    const life = async (i: number) => {
      const ledger = ledgers[i % 2];
      const acc = i % 3 ? a : b;
      const id = `${acc.organizationId}_p${i}`;
      const o = await ledger.open({ ...openRow(acc.organizationId, id, '1', '0.1'), api_key_id: i % 4 ? acc.k1 : acc.k2, user_id: acc.userId });
      if (!('granted' in o)) return;
      await ledger.close(i % 5 ? { id, status: 'completed', cost: '0.3' } : { id, status: 'failed' });
    };
    await Promise.all(Array.from({ length: 120 }, (_, i) => life(i).catch((e: AppError) => expect(e.metadata?.reason).toMatch(/limit_exceeded|balance_insufficient/))));
    for (const acc of [a, b]) {
      const [row] = (
        await t.pool.query(
          `SELECT o.balance::text, o.reserved::text, o.spent::text,
                  (SELECT 30 + sum(l.amount) FROM ledger_entries l WHERE l.organization_id = o.id AND l.kind <> 'topup')::text AS ledger_balance,
                  (SELECT sum(r.charged) FROM reservations r WHERE r.organization_id = o.id)::text AS charged
             FROM organizations o WHERE o.id = $1`,
          [acc.organizationId],
        )
      ).rows;
      expect(Number(row.reserved)).toBe(0);
      expect(row.balance).toBe(row.ledger_balance);
      expect(Number(row.spent)).toBe(Number(row.charged));
      expect(Number(row.spent)).toBeGreaterThan(0);
    }
  });

  it('refuses, within one group, the opens the balance no longer covers, and a failing item fails alone', async () => {
    const a = await account('2.5');
    const { calls, ledger } = recordingLedger();
    const ids = Array.from({ length: 6 }, (_, i) => `${a.organizationId}_g${i}`);
    const outcomes = await Promise.all(
      [
        ...ids.map((id) => ledger.open(openRow(a.organizationId, id, '1', '0.4'))),
        // A malformed amount fails its group; the group commit retries item by item and only this one fails.
        ledger.open(openRow(a.organizationId, `${a.organizationId}_bad`, 'not a number')),
      ].map((p) => p.then((o) => ('granted' in o ? o.granted.toFixed(2) : JSON.stringify(o)), (e: AppError) => e.metadata?.reason ?? 'error')),
    );
    expect(outcomes.slice(0, 6)).toEqual(['1.00', '1.00', '0.50', 'balance_insufficient', 'balance_insufficient', 'balance_insufficient']);
    expect(outcomes[6]).toBe('error');
    expect(calls.length).toBeGreaterThan(2);
    const [org] = (await t.pool.query(`SELECT balance::text, reserved::text FROM organizations WHERE id = $1`, [a.organizationId])).rows;
    expect(org).toEqual({ balance: '2.5000000000', reserved: '2.5000000000' });
  });
});
