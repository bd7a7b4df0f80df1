import type { Db } from '../db/client';
import type { ApiKey, User } from '../db/generated/client';
import { money, moneyNumber, moneyString, ZERO, type Decimal } from '../money';
import { periodStart, type LimitReset } from '../billing/periods';

interface Usage {
  total: Decimal;
  daily: Decimal;
  weekly: Decimal;
  monthly: Decimal;
}

interface Limited {
  limit: ApiKey['limit'];
  limitReset: ApiKey['limitReset'];
  periodStart: Date | null;
  periodSpent: ApiKey['periodSpent'];
  reserved: ApiKey['reserved'];
}

/**
 * Whether a stored period start is the current period's, as sy_period_spent decides it. A `never` limit's period
 * starts at `-infinity` in PostgreSQL, which reaches JavaScript as -Infinity or an invalid Date, never as the epoch.
 */
export function inCurrentPeriod(stored: Date | null, reset: LimitReset, now: Date): boolean {
  if (!stored) return false;
  const at = stored.getTime();
  if (reset === 'never') return !Number.isFinite(at);
  return at === periodStart(reset, now).getTime();
}

/** What is left of a limit now: limit − spent in the current period − held reservations, never below 0. */
export function limitRemaining(subject: Limited, now: Date): Decimal | null {
  if (subject.limit === null) return null;
  const reset = (subject.limitReset ?? 'never') as LimitReset;
  const spent = inCurrentPeriod(subject.periodStart, reset, now) ? money(subject.periodSpent) : ZERO;
  const left = money(subject.limit).minus(spent).minus(money(subject.reserved));
  return left.isNegative() ? ZERO : left;
}

type Reserving = { id: string; reserved: Limited['reserved'] };

/** The table of the rows whose leases a reservations column names. */
const OWNER_TABLES = { organization_id: 'organizations', api_key_id: 'api_keys', user_id: 'users' } as const;

/**
 * Key info, balances: read models over the ledger and the counters the money functions keep. What they show as
 * reserved leaves out the unspent part of reservation leases (shared/billing/leases.ts): money a process set aside
 * for requests still to come, not held by any running one.
 */
export class KeyInfoService {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * The rows with `reserved` less what leases hold for them (`column`: whose leases: the organization's, a key's, a
   * member's). The row's `reserved` is read again with its leases, in one statement: one snapshot, so a lease taken or
   * given back meanwhile is counted on both sides or on neither (read apart, a lease given back between the two reads
   * showed as money reserved).
   */
  async unleased<T extends Reserving>(column: keyof typeof OWNER_TABLES, rows: T[]): Promise<T[]> {
    if (rows.length === 0) return rows;
    const fresh = await this.db.$queryRawUnsafe<Array<{ id: string; reserved: string }>>(
      `SELECT t.id, (t.reserved - COALESCE(l.leased, 0))::text AS reserved
         FROM ${OWNER_TABLES[column]} t
         LEFT JOIN (SELECT ${column} AS id, SUM(amount) AS leased FROM reservations
                     WHERE expires_at IS NOT NULL AND status = 'held' AND ${column} = ANY ($1::text[]) GROUP BY ${column}) l ON l.id = t.id
        WHERE t.id = ANY ($1::text[])`,
      rows.map((r) => r.id),
    );
    const reserved = new Map(fresh.map((x) => [x.id, money(x.reserved)]));
    return rows.map((r) => (reserved.has(r.id) ? { ...r, reserved: reserved.get(r.id)! } : r));
  }

  async usage(keyId: string): Promise<Usage> {
    const now = this.clock();
    const rows = await this.db.$queryRaw<Array<{ total: string; daily: string; weekly: string; monthly: string }>>`
      SELECT COALESCE(SUM(-amount), 0)::text AS total,
             COALESCE(SUM(-amount) FILTER (WHERE created_at >= ${periodStart('daily', now)}), 0)::text AS daily,
             COALESCE(SUM(-amount) FILTER (WHERE created_at >= ${periodStart('weekly', now)}), 0)::text AS weekly,
             COALESCE(SUM(-amount) FILTER (WHERE created_at >= ${periodStart('monthly', now)}), 0)::text AS monthly
      FROM ledger_entries WHERE api_key_id = ${keyId} AND kind = 'charge'`;
    const r = rows[0];
    return { total: money(r.total), daily: money(r.daily), weekly: money(r.weekly), monthly: money(r.monthly) };
  }

  /** The key info record of GET /v1/key: every field always present. */
  async keyInfo(leasedKey: ApiKey) {
    const [u, [key]] = await Promise.all([this.usage(leasedKey.id), this.unleased('api_key_id', [leasedKey])]);
    const remaining = limitRemaining(key, this.clock());
    return {
      creator_user_id: key.creatorUserId,
      label: key.label,
      limit: key.limit === null ? null : moneyNumber(key.limit),
      limit_remaining: remaining === null ? null : moneyNumber(remaining),
      limit_reset: key.limit === null ? null : key.limitReset,
      usage: moneyNumber(u.total),
      usage_daily: moneyNumber(u.daily),
      usage_weekly: moneyNumber(u.weekly),
      usage_monthly: moneyNumber(u.monthly),
    };
  }

  /** The key info record of the key with id `keyId` (GET /v1/key). */
  async keyInfoOf(keyId: string) {
    return this.keyInfo(await this.db.apiKey.findUniqueOrThrow({ where: { id: keyId } }));
  }

  /**
   * Balance figures as a caller sees them: through its API key (`keyId`) and/or as a member (`userId`), whose
   * personal limit counts only when it has one.
   */
  async balanceFor(who: { organizationId: string; keyId?: string | null; userId?: string | null }) {
    const key = who.keyId ? await this.db.apiKey.findUniqueOrThrow({ where: { id: who.keyId } }) : null;
    const member = who.userId ? await this.db.user.findUnique({ where: { id: who.userId } }) : null;
    return this.balance(who.organizationId, key, member && member.limit !== null ? member : null);
  }

  /** Balance figures for an organization seen through a key and/or a member. */
  async balance(organizationId: string, leasedKey: ApiKey | null, leasedMember: User | null) {
    const [[org], [key], [member]] = await Promise.all([
      this.db.organization.findUniqueOrThrow({ where: { id: organizationId } }).then((o) => this.unleased('organization_id', [o])),
      this.unleased('api_key_id', leasedKey ? [leasedKey] : []),
      this.unleased('user_id', leasedMember ? [leasedMember] : []),
    ]);
    const now = this.clock();
    const keyRemaining = key ? limitRemaining(key, now) : null;
    const memberRemaining = member ? limitRemaining(member, now) : null;
    let available = money(org.balance).minus(money(org.reserved));
    for (const r of [keyRemaining, memberRemaining]) if (r !== null && r.lessThan(available)) available = r;
    if (available.isNegative()) available = ZERO;
    const limitView = (s: Limited | null, remaining: Decimal | null) =>
      s && s.limit !== null ? { limit: moneyString(s.limit), limitRemaining: moneyString(remaining ?? ZERO), limitReset: s.limitReset } : null;
    return {
      org,
      available,
      memberRemaining,
      v2: {
        amount: moneyString(org.balance),
        available: moneyString(available),
        reserved: moneyString(org.reserved),
        spent: moneyString(org.spent),
        currency: 'RUB' as const,
        updatedAt: org.updatedAt.toISOString(),
        key: limitView(key, keyRemaining),
        member: limitView(member, memberRemaining),
      },
    };
  }
}
