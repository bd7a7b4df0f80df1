"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.KeyInfoService = void 0;
exports.inCurrentPeriod = inCurrentPeriod;
exports.limitRemaining = limitRemaining;
const money_1 = require("../billing/money");
const periods_1 = require("../billing/periods");
/**
 * Whether a stored period start is the current period's, as sy_period_spent decides it. A `never` limit's period
 * starts at `-infinity` in PostgreSQL, which reaches JavaScript as -Infinity or an invalid Date, never as the epoch.
 */
function inCurrentPeriod(stored, reset, now) {
    if (!stored)
        return false;
    const at = stored.getTime();
    if (reset === 'never')
        return !Number.isFinite(at);
    return at === (0, periods_1.periodStart)(reset, now).getTime();
}
/** What is left of a limit now: limit − spent in the current period − held reservations, never below 0. */
function limitRemaining(subject, now) {
    if (subject.limit === null)
        return null;
    const reset = (subject.limitReset ?? 'never');
    const spent = inCurrentPeriod(subject.periodStart, reset, now) ? (0, money_1.money)(subject.periodSpent) : money_1.ZERO;
    const left = (0, money_1.money)(subject.limit).minus(spent).minus((0, money_1.money)(subject.reserved));
    return left.isNegative() ? money_1.ZERO : left;
}
/** Key info, balances: read models over the ledger and the counters the money functions keep. */
class KeyInfoService {
    db;
    clock;
    constructor(db, clock = () => new Date()) {
        this.db = db;
        this.clock = clock;
    }
    async usage(keyId) {
        const now = this.clock();
        const rows = await this.db.$queryRaw `
      SELECT COALESCE(SUM(-amount), 0)::text AS total,
             COALESCE(SUM(-amount) FILTER (WHERE created_at >= ${(0, periods_1.periodStart)('daily', now)}), 0)::text AS daily,
             COALESCE(SUM(-amount) FILTER (WHERE created_at >= ${(0, periods_1.periodStart)('weekly', now)}), 0)::text AS weekly,
             COALESCE(SUM(-amount) FILTER (WHERE created_at >= ${(0, periods_1.periodStart)('monthly', now)}), 0)::text AS monthly
      FROM ledger_entries WHERE api_key_id = ${keyId} AND kind = 'charge'`;
        const r = rows[0];
        return { total: (0, money_1.money)(r.total), daily: (0, money_1.money)(r.daily), weekly: (0, money_1.money)(r.weekly), monthly: (0, money_1.money)(r.monthly) };
    }
    /** The key info record of GET /v1/key: every field always present. */
    async keyInfo(key) {
        const u = await this.usage(key.id);
        const remaining = limitRemaining(key, this.clock());
        return {
            creator_user_id: key.creatorUserId,
            label: key.label,
            limit: key.limit === null ? null : (0, money_1.moneyNumber)(key.limit),
            limit_remaining: remaining === null ? null : (0, money_1.moneyNumber)(remaining),
            limit_reset: key.limit === null ? null : key.limitReset,
            usage: (0, money_1.moneyNumber)(u.total),
            usage_daily: (0, money_1.moneyNumber)(u.daily),
            usage_weekly: (0, money_1.moneyNumber)(u.weekly),
            usage_monthly: (0, money_1.moneyNumber)(u.monthly),
        };
    }
    /** The key info record of the key with id `keyId` (GET /v1/key). */
    async keyInfoOf(keyId) {
        return this.keyInfo(await this.db.apiKey.findUniqueOrThrow({ where: { id: keyId } }));
    }
    /**
     * Balance figures as a caller sees them: through its API key (`keyId`) and/or as a member (`userId`), whose
     * personal limit counts only when it has one.
     */
    async balanceFor(who) {
        const key = who.keyId ? await this.db.apiKey.findUniqueOrThrow({ where: { id: who.keyId } }) : null;
        const member = who.userId ? await this.db.user.findUnique({ where: { id: who.userId } }) : null;
        return this.balance(who.organizationId, key, member && member.limit !== null ? member : null);
    }
    /** Balance figures for an organization seen through a key and/or a member. */
    async balance(organizationId, key, member) {
        const org = await this.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
        const now = this.clock();
        const keyRemaining = key ? limitRemaining(key, now) : null;
        const memberRemaining = member ? limitRemaining(member, now) : null;
        let available = (0, money_1.money)(org.balance).minus((0, money_1.money)(org.reserved));
        for (const r of [keyRemaining, memberRemaining])
            if (r !== null && r.lessThan(available))
                available = r;
        if (available.isNegative())
            available = money_1.ZERO;
        const limitView = (s, remaining) => s && s.limit !== null ? { limit: (0, money_1.moneyString)(s.limit), limitRemaining: (0, money_1.moneyString)(remaining ?? money_1.ZERO), limitReset: s.limitReset } : null;
        return {
            org,
            available,
            memberRemaining,
            v2: {
                amount: (0, money_1.moneyString)(org.balance),
                available: (0, money_1.moneyString)(available),
                reserved: (0, money_1.moneyString)(org.reserved),
                spent: (0, money_1.moneyString)(org.spent),
                currency: 'RUB',
                updatedAt: org.updatedAt.toISOString(),
                key: limitView(key, keyRemaining),
                member: limitView(member, memberRemaining),
            },
        };
    }
}
exports.KeyInfoService = KeyInfoService;
