"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.GenerationService = exports.IDEMPOTENCY_TTL_MS = exports.RUNNING = void 0;
const app_error_1 = require("../errors/app-error");
const money_1 = require("../billing/money");
const ledger_1 = require("../billing/ledger");
/** What a replay needs of an existing generation. */
/** The states of a generation that has not ended yet: queued or running. */
exports.RUNNING = new Set(['pending', 'processing']);
/** How long an Idempotency-Key names its generation (docs/idempotency.md; the same 24 hours in the SQL). */
exports.IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/**
 * The life of a generation record. Creation reserves money and inserts the record in one transaction;
 * finishing settles the reservation and writes the outcome in one transaction (batched with others). Whoever finishes first (worker, cancel,
 * time-out) wins; later finishes change nothing, so nothing is charged twice.
 */
class GenerationService {
    db;
    clock;
    ledger;
    constructor(db, clock = () => new Date(), 
    /** Where the money moves (reservations with the insert, settlements with the ending). */
    ledger = new ledger_1.Ledger(db, clock)) {
        this.db = db;
        this.clock = clock;
        this.ledger = ledger;
    }
    /** Reserves and records a pending generation; returns the amount granted (402 when nothing fits). */
    async create(g) {
        const r = await this.createOrReplay(g);
        if ('replayOf' in r)
            throw new app_error_1.AppError('CONFLICT', `Idempotency-Key already used by generation ${r.replayOf}`);
        return r.granted;
    }
    /**
     * `create`, or — when the generation's Idempotency-Key is already held by the same request within 24 hours —
     * the id of the generation that request made (nothing reserved). Another request under the key is 409.
     */
    async createOrReplay(g) {
        const opened = await this.ledger.open({
            id: g.id,
            organization_id: g.organizationId,
            api_key_id: g.apiKeyId,
            user_id: g.userId,
            bound: (0, money_1.toStorage)(g.bound),
            minimum: (0, money_1.toStorage)(g.minimum ?? g.bound),
            model: g.model,
            unified_model_id: g.unifiedModelId,
            model_display_name: g.modelDisplayName,
            request_type: g.requestType,
            api_type: g.apiType,
            response_mode: g.responseMode,
            request: g.request ?? {},
            warnings: g.warnings ?? null,
            routing: g.routing ?? null,
            call_back_url: g.callBackUrl ?? null,
            source_generation_id: g.sourceGenerationId ?? null,
            previous_response_id: g.previousResponseId ?? null,
            trace_id: g.traceId ?? null,
            idempotency_key: g.idempotency?.key ?? null,
            request_hash: g.idempotency?.hash ?? null,
        });
        if ('conflictWith' in opened) {
            throw new app_error_1.AppError('CONFLICT', `Idempotency-Key "${g.idempotency.key}" was already used with a different request (generation ${opened.conflictWith}); use a new key for a new request`, {
                metadata: { generation_id: opened.conflictWith },
            });
        }
        return opened;
    }
    /** Deletes Idempotency-Keys past their 24 hours (they are already ignored; this keeps the table small). */
    async forgetExpiredIdempotencyKeys(now = this.clock()) {
        return this.db.idempotencyKey.deleteMany({ where: { createdAt: { lt: new Date(now.getTime() - exports.IDEMPOTENCY_TTL_MS) } } }).then((r) => r.count);
    }
    /** Status and stored outcome of a generation (replays of an Idempotency-Key), or null. */
    async state(id) {
        return this.db.generation.findUnique({ where: { id }, select: { id: true, status: true, result: true, error: true } });
    }
    /** pending → processing (media and background jobs, so pollers see progress). */
    async markProcessing(id, queueTimeMs) {
        const n = await this.db.$executeRaw `
      UPDATE generations SET status = 'processing', started_at = ${this.clock()}::timestamptz,
        queue_time_ms = COALESCE(${queueTimeMs ?? null}::int, queue_time_ms)
      WHERE id = ${id} AND status = 'pending'`;
        return n > 0;
    }
    /**
     * Settles and records the end of a generation atomically. Returns `applied: false` when the generation had
     * already ended (its first ending stands).
     */
    async finish(id, f) {
        const row = {
            id,
            status: f.status,
            result: f.result ?? null,
            usage: f.usage ?? null,
            error: f.error ?? null,
            warnings: f.warnings ?? null,
            routing: f.routing ?? null,
            model: f.model ?? null,
            provider: f.provider ?? null,
            final_endpoint_slug: f.finalEndpointSlug ?? null,
            finish_reason: f.finishReason ?? null,
            attempts_count: f.attemptsCount ?? null,
            latency_ms: f.latencyMs === undefined || f.latencyMs === null ? null : Math.round(f.latencyMs),
            queue_time_ms: f.queueTimeMs === undefined || f.queueTimeMs === null ? null : Math.round(f.queueTimeMs),
            generation_time_ms: f.generationTimeMs === undefined || f.generationTimeMs === null ? null : Math.round(f.generationTimeMs),
            upstream_id: f.upstreamId ?? null,
        };
        if (f.cost !== undefined)
            row.cost = (0, money_1.toStorage)(f.cost);
        return this.ledger.close(row);
    }
}
exports.GenerationService = GenerationService;
