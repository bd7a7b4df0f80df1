/**
 * What "nothing is lost" means, checked straight in the database after a fault:
 *   - every organization's balance, reserved and spent equal the sums of its ledger entries;
 *   - no reservation is left held, nothing stays reserved on organizations, keys or members;
 *   - each generation is settled at most once (one charge OR one release), and its recorded cost is what
 *     its reservation charged; cancelled generations and failed ones that produced nothing cost nothing;
 *   - no balance below zero, no key above its limit;
 *   - no generation left pending or processing.
 * `lost` adds up every discrepancy in RUB; the suite requires it to be exactly 0.
 */
import type { Db } from '../../../shared/db/client';
import { Decimal, money } from '../../../shared/money';
import { waitFor } from '../../helpers/until';

export interface Audit {
  problems: string[];
  /** RUB that went missing or was taken wrongly (sum of absolute discrepancies). */
  lost: Decimal;
  stuck: Array<{ id: string; status: string; createdAt: Date }>;
  generations: number;
  byStatus: Record<string, number>;
  charged: Decimal;
  /** Generations the reaper failed and released (their job was lost). */
  reaped: number;
}

type Row = Record<string, unknown>;
const d = (v: unknown) => money(v === null || v === undefined ? 0 : String(v));

export async function audit(db: Db): Promise<Audit> {
  const problems: string[] = [];
  let lost = money(0);
  const q = <T extends Row>(sql: string) => db.$queryRawUnsafe<T[]>(sql);

  const orgs = await q(`
    SELECT o.id, o.balance, o.reserved, o.spent,
      COALESCE(SUM(l.amount), 0) AS ledger_balance,
      COALESCE(SUM(l.reserved_delta), 0) AS ledger_reserved,
      COALESCE(-SUM(l.amount) FILTER (WHERE l.kind = 'charge'), 0) AS ledger_spent
    FROM organizations o LEFT JOIN ledger_entries l ON l.organization_id = o.id
    GROUP BY o.id`);
  for (const o of orgs) {
    for (const [col, ledger] of [['balance', 'ledger_balance'], ['reserved', 'ledger_reserved'], ['spent', 'ledger_spent']] as const) {
      const diff = d(o[col]).minus(d(o[ledger])).abs();
      if (!diff.isZero()) {
        problems.push(`organization ${o.id}: ${col} ${d(o[col])} but the ledger says ${d(o[ledger])}`);
        if (col !== 'reserved') lost = lost.plus(diff); // a reserve is counted once, below
      }
    }
    if (d(o.balance).isNegative()) {
      problems.push(`organization ${o.id}: balance below zero (${d(o.balance)})`);
      lost = lost.plus(d(o.balance).abs());
    }
    if (!d(o.reserved).isZero()) {
      // Money locked by reservations nobody will settle.
      problems.push(`organization ${o.id}: ${d(o.reserved)} still reserved`);
      lost = lost.plus(d(o.reserved).abs());
    }
  }

  const keys = await q(`
    SELECT k.id, k."limit", k.usage, k.reserved, COALESCE(-SUM(l.amount) FILTER (WHERE l.kind = 'charge'), 0) AS ledger_usage
    FROM api_keys k LEFT JOIN ledger_entries l ON l.api_key_id = k.id GROUP BY k.id`);
  for (const k of keys) {
    if (!d(k.reserved).isZero()) {
      // The same money as the organization's reserve (counted there): a problem, not a second loss.
      problems.push(`key ${k.id}: ${d(k.reserved)} still reserved`);
    }
    const diff = d(k.usage).minus(d(k.ledger_usage)).abs();
    if (!diff.isZero()) {
      problems.push(`key ${k.id}: usage ${d(k.usage)} but the ledger says ${d(k.ledger_usage)}`);
    }
    if (k.limit !== null && d(k.usage).greaterThan(d(k.limit))) {
      problems.push(`key ${k.id}: spent ${d(k.usage)} over its limit ${d(k.limit)}`);
      lost = lost.plus(d(k.usage).minus(d(k.limit)));
    }
  }
  const users = await q(`SELECT id, reserved FROM users WHERE reserved <> 0`);
  for (const u of users) {
    problems.push(`user ${u.id}: ${d(u.reserved)} still reserved`);
  }

  const held = await q(`SELECT generation_id, amount FROM reservations WHERE status = 'held'`);
  for (const r of held) problems.push(`reservation of ${r.generation_id} still held (${d(r.amount)})`);

  const multi = await q(`
    SELECT generation_id, COUNT(*)::int AS n, -SUM(amount) AS taken FROM ledger_entries
    WHERE kind IN ('charge', 'release') GROUP BY generation_id HAVING COUNT(*) > 1`);
  for (const m of multi) {
    problems.push(`generation ${m.generation_id} settled ${m.n} times`);
    lost = lost.plus(d(m.taken));
  }

  const gens = await q(`
    SELECT g.id, g.status::text AS status, g.client_cost, g.usage IS NOT NULL AS has_usage, g.created_at,
      r.status::text AS reservation, r.charged
    FROM generations g LEFT JOIN reservations r ON r.generation_id = g.id`);
  const byStatus: Record<string, number> = {};
  const stuck: Audit['stuck'] = [];
  let charged = money(0);
  for (const g of gens) {
    const status = String(g.status);
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    charged = charged.plus(d(g.charged));
    if (status === 'pending' || status === 'processing') {
      stuck.push({ id: String(g.id), status, createdAt: g.created_at as Date });
      continue;
    }
    if (g.reservation === 'held') continue; // counted above
    if (g.reservation && !d(g.client_cost).equals(d(g.charged))) {
      problems.push(`generation ${g.id}: records cost ${d(g.client_cost)} but its reservation charged ${d(g.charged)}`);
      lost = lost.plus(d(g.client_cost).minus(d(g.charged)).abs());
    }
    const free = status === 'cancelled' || (status === 'failed' && !g.has_usage);
    if (free && !d(g.charged).isZero()) {
      problems.push(`generation ${g.id} is ${status} yet was charged ${d(g.charged)}`);
      lost = lost.plus(d(g.charged));
    }
  }
  for (const s of stuck) problems.push(`generation ${s.id} stuck in ${s.status}`);

  // GET /v1/activity's totals (kept by a trigger as generations end): each organization's equal its ledger charges and
  // count every generation that ended, in both tables; each member's equal its charges and endings (with or without a
  // key) in activity_member_totals.
  const activity = await q(`
    SELECT o.id,
      (SELECT COALESCE(SUM(usage), 0) FROM activity_org_totals a WHERE a.organization_id = o.id) AS org_usage,
      (SELECT COALESCE(SUM(requests), 0) FROM activity_org_totals a WHERE a.organization_id = o.id) AS org_requests,
      (SELECT COALESCE(SUM(usage), 0) FROM activity_totals a WHERE a.organization_id = o.id) AS usage,
      (SELECT COALESCE(SUM(requests), 0) FROM activity_totals a WHERE a.organization_id = o.id) AS requests,
      (SELECT COALESCE(-SUM(amount), 0) FROM ledger_entries l WHERE l.organization_id = o.id AND l.kind = 'charge') AS charged,
      (SELECT COUNT(*) FROM generations g WHERE g.organization_id = o.id AND g.status IN ('completed', 'failed', 'cancelled')) AS ended
    FROM organizations o`);
  for (const a of activity) {
    for (const [usage, requests] of [['usage', 'requests'], ['org_usage', 'org_requests']] as const) {
      if (!d(a[usage]).equals(d(a.charged))) problems.push(`organization ${a.id}: activity ${usage} ${d(a[usage])} but the ledger charged ${d(a.charged)}`);
      if (!d(a[requests]).equals(d(a.ended))) problems.push(`organization ${a.id}: activity ${requests} ${d(a[requests])} but ${d(a.ended)} generations ended`);
    }
  }
  const members = await q(`
    SELECT u.organization_id, u.id,
      (SELECT COALESCE(SUM(usage), 0) FROM activity_member_totals a WHERE a.organization_id = u.organization_id AND a.user_id = u.id) AS usage,
      (SELECT COALESCE(SUM(requests), 0) FROM activity_member_totals a WHERE a.organization_id = u.organization_id AND a.user_id = u.id) AS requests,
      (SELECT COALESCE(-SUM(amount), 0) FROM ledger_entries l WHERE l.organization_id = u.organization_id AND l.user_id = u.id AND l.kind = 'charge') AS charged,
      (SELECT COUNT(*) FROM generations g WHERE g.organization_id = u.organization_id AND g.user_id = u.id AND g.status IN ('completed', 'failed', 'cancelled')) AS ended
    FROM users u`);
  for (const m of members) {
    if (!d(m.usage).equals(d(m.charged))) problems.push(`member ${m.id}: activity usage ${d(m.usage)} but the ledger charged ${d(m.charged)}`);
    if (!d(m.requests).equals(d(m.ended))) problems.push(`member ${m.id}: activity requests ${d(m.requests)} but ${d(m.ended)} generations ended`);
  }
  const [{ n: reaped }] = await q<{ n: number }>(`SELECT COUNT(*)::int AS n FROM generations WHERE error->>'message' LIKE 'The generation was interrupted%'`);
  return { problems, lost, stuck, generations: gens.length, byStatus, charged, reaped };
}

/** Audits until nothing is pending any more (workers and the reaper finish their work), or the time is up. */
export async function settledAudit(db: Db, timeoutMs = 20_000): Promise<Audit> {
  let a: Audit | undefined;
  const settled = async () => {
    a = await audit(db).catch((e: Error) => ({ problems: [e.message], lost: money(0), stuck: [{ id: '?', status: 'db', createdAt: new Date() }] }) as unknown as Audit);
    return a.stuck.length === 0 && a.problems.length === 0;
  };
  // The last audit either way: its problems are the case's findings.
  await waitFor('a settled audit', settled, timeoutMs, 250).catch(() => undefined);
  return a!;
}

export { Decimal };
