"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Ledger = void 0;
const batcher_1 = require("../db/batcher");
const app_error_1 = require("../errors/app-error");
const metrics_1 = require("../metrics/metrics");
const money_1 = require("./money");
/** The one wording of each refusal (402 and 403 replies), whichever money call refused. */
const REFUSAL_MESSAGES = {
    balance_insufficient: 'Insufficient funds: the organization balance does not cover this request',
    key_limit_exceeded: 'The spending limit of this API key is reached for the current period',
    member_limit_exceeded: 'Your personal spending limit is reached for the current period',
};
/** Throws the error a reservation's refusal reason stands for (an unknown organization is 404). */
function refuse(reason) {
    if (reason === 'not_found')
        throw new app_error_1.AppError('NOT_FOUND', 'Organization not found');
    throw app_error_1.AppError.fromReason(reason, REFUSAL_MESSAGES[reason]);
}
/**
 * The money core: reserve → charge / release, and top-ups. Each call is one atomic SQL function (the
 * money_functions and set_based_ledger_batches migrations), idempotent per generation id, safe under any concurrency.
 * Money moves only through this module.
 *
 * The hot path (`open`, `close`) reserves with the generation's insert and settles with its ending, group-committed
 * (shared/db/batcher.ts): opens and closes share one batch, so one request's open and another's close take each
 * organization row's lock once, in one transaction with one WAL flush.
 */
class Ledger {
    db;
    clock;
    pool;
    metrics;
    constructor(db, clock = () => new Date(), opts = {}) {
        this.db = db;
        this.clock = clock;
        this.pool = opts.pool;
        this.metrics = opts.metrics;
    }
    /** One batcher for both kinds; keyed by generation id, so a generation's open and close never share a batch. */
    batch = new batcher_1.Batcher(async (items) => {
        const opens = items.flatMap((i) => (i.kind === 'open' ? [i.row] : []));
        const closes = items.flatMap((i) => (i.kind === 'close' ? [i.row] : []));
        const out = await this.sql(`SELECT kind, id, granted::text AS granted, reason, existing_id, outcome, charged::text AS charged, applied
           FROM sy_ledger_batch($1::jsonb, $2::jsonb, $3::timestamptz)`, [JSON.stringify(opens), JSON.stringify(closes), this.clock()]);
        const byItem = new Map(out.map((r) => [`${r.kind}:${r.id}`, r]));
        return items.map((i) => byItem.get(`${i.kind}:${i.row.id}`));
    }, (i) => i.row.id);
    /** SQL straight through the injected pool, else through Prisma. */
    async sql(text, params) {
        if (this.pool)
            return (await this.pool.query(text, params)).rows;
        return this.db.$queryRawUnsafe(text, ...params);
    }
    /**
     * Reserves `bound` (at least `minimum`) and inserts the generation record in one transaction, or finds the
     * generation its Idempotency-Key already names. Throws 402/403 when nothing fits, 404 for an unknown organization.
     */
    async open(row) {
        const { granted, reason, existing_id } = await this.batch.submit({ kind: 'open', row });
        if (reason === 'idempotent_replay')
            return { replayOf: existing_id };
        if (reason === 'idempotency_conflict')
            return { conflictWith: existing_id };
        if (reason)
            refuse(reason);
        this.metrics?.moneyReserved.inc((0, metrics_1.rub)(granted));
        return { granted: (0, money_1.money)(granted) };
    }
    /**
     * Settles a generation's reservation (charges `cost`, or releases it all) and writes its ending in one
     * transaction. `applied: false` when the generation had already ended: its first ending stands.
     */
    async close(row) {
        const r = await this.batch.submit({ kind: 'close', row });
        const charged = (0, money_1.money)(r.charged);
        if (r.applied && charged.greaterThan(0))
            this.metrics?.moneyCharged.inc({ model: row.model ?? 'unknown' }, (0, metrics_1.rub)(charged));
        return { applied: r.applied, charged };
    }
    /** Reserves up to `amount` (at least `minimum`) for a generation; returns the granted amount or throws 402. */
    async reserve(input) {
        const rows = await this.db.$queryRaw `
      SELECT granted::text AS granted, reason FROM sy_reserve(${input.generationId}, ${input.organizationId},
        ${input.apiKeyId ?? null}, ${input.userId ?? null}, ${(0, money_1.toStorage)(input.amount)}::numeric,
        ${(0, money_1.toStorage)(input.minimum ?? input.amount)}::numeric, ${this.clock()}::timestamptz)`;
        const { granted, reason } = rows[0];
        if (reason)
            refuse(reason);
        return (0, money_1.money)(granted);
    }
    /** Charges the real cost and frees the rest of the reservation. Running it twice charges once. */
    charge(generationId, actual) {
        return this.settle(generationId, actual, false);
    }
    /** Frees the whole reservation: failed and cancelled generations cost nothing. */
    release(generationId) {
        return this.settle(generationId, 0, true);
    }
    async topUp(organizationId, amount) {
        const rows = await this.db.$queryRaw `
      SELECT sy_topup(${organizationId}, ${(0, money_1.toStorage)(amount)}::numeric, ${this.clock()}::timestamptz)::text AS balance`;
        return rows[0].balance === null ? null : (0, money_1.money)(rows[0].balance);
    }
    async settle(generationId, actual, release) {
        const rows = await this.db.$queryRaw `
      SELECT outcome, charged::text AS charged FROM sy_settle(${generationId}, ${(0, money_1.toStorage)(actual)}::numeric,
        ${release}, ${this.clock()}::timestamptz)`;
        return { outcome: rows[0].outcome, charged: (0, money_1.money)(rows[0].charged) };
    }
}
exports.Ledger = Ledger;
