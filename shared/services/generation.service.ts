import { poolOf, type Db } from '../db/client';
import { AppError } from '../errors/app-error';
import { money, toStorage, type Decimal, type MoneyLike } from '../billing/money';
import type { ReserveRefusal } from '../billing/ledger';
import { rub, type Metrics } from '../metrics/metrics';
import { Batcher } from '../db/batcher';

export type RequestType = 'chat' | 'embedding' | 'image' | 'video' | 'audio' | 'upscale';
export type ApiType = 'responses' | 'chat_completions' | 'embeddings' | 'images' | 'media' | 'systemone';
export type ResponseMode = 'sync' | 'stream' | 'async';

export interface NewGeneration {
  id: string;
  organizationId: string;
  apiKeyId: string | null;
  userId: string | null;
  model: string;
  unifiedModelId: string;
  modelDisplayName: string;
  requestType: RequestType;
  apiType: ApiType;
  responseMode: ResponseMode;
  request: unknown;
  warnings?: string[];
  routing?: unknown;
  callBackUrl?: string | null;
  sourceGenerationId?: string | null;
  previousResponseId?: string | null;
  traceId?: string | null;
  /** Upper bound of the cost, and the least that still lets the request run. */
  bound: MoneyLike;
  minimum?: MoneyLike;
  /** The caller's Idempotency-Key and the hash of its request (docs/idempotency.md). */
  idempotency?: IdempotencyClaim;
}

export interface IdempotencyClaim {
  key: string;
  /** sha256 of the method, path and canonical body: the same key with another request is 409. */
  hash: string;
}

/** A new generation was reserved and recorded, or the Idempotency-Key already names one (`replayOf`). */
export type Created = { granted: Decimal } | { replayOf: string };

/** What a replay needs of an existing generation. */
export interface GenerationState {
  id: string;
  status: 'pending' | 'processing' | 'completed' | 'failed' | 'cancelled';
  result: unknown;
  error: unknown;
}

export interface Finish {
  status: 'completed' | 'failed' | 'cancelled';
  /**
   * Real cost to charge. Absent: the reservation is released (failed and cancelled generations cost nothing);
   * a stream that failed after producing output passes what it produced.
   */
  cost?: MoneyLike;
  result?: unknown;
  usage?: unknown;
  error?: unknown;
  warnings?: string[];
  routing?: unknown;
  model?: string;
  provider?: string | null;
  finalEndpointSlug?: string | null;
  finishReason?: string | null;
  attemptsCount?: number;
  latencyMs?: number | null;
  queueTimeMs?: number | null;
  generationTimeMs?: number | null;
  upstreamId?: string | null;
}

const REFUSALS: Record<ReserveRefusal, string> = {
  balance_insufficient: 'Insufficient funds: the organization balance does not cover this request',
  key_limit_exceeded: 'The spending limit of this API key is reached for the current period',
  member_limit_exceeded: 'Your personal spending limit is reached for the current period',
};

/** How long an Idempotency-Key names its generation (docs/idempotency.md; the same 24 hours in the SQL). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;

interface CreateItem {
  id: string;
  [column: string]: unknown;
}

/**
 * The life of a generation record. Creation reserves money and inserts the record in one transaction;
 * finishing settles the reservation and writes the outcome in one transaction (batched with others). Whoever finishes first (worker, cancel,
 * time-out) wins; later finishes change nothing, so nothing is charged twice.
 */
export class GenerationService {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
    /** Money counters (`switchyard_money_*`): reservations made, charges actually applied. */
    private readonly metrics?: Pick<Metrics, 'moneyReserved' | 'moneyCharged'>,
  ) {}

  // Group commit (see shared/db/batcher.ts and the batched_generations migration): many generations, one
  // transaction, one lock on each organization row, one WAL flush.
  private readonly creates = new Batcher<CreateItem, { granted: string; reason: string | null; existing_id: string | null }>(
    async (items) => {
      const rows = await this.sql<{ id: string; granted: string; reason: string | null; existing_id: string | null }>(
        'SELECT id, granted::text AS granted, reason, existing_id FROM sy_create_generations_keyed($1::jsonb, $2::timestamptz)',
        [JSON.stringify(items), this.clock()],
      );
      const byId = new Map(rows.map((r) => [r.id, r]));
      return items.map((i) => byId.get(i.id)!);
    },
    (i) => i.id,
  );

  private readonly finishes = new Batcher<Record<string, unknown>, { outcome: string; charged: string; applied: boolean }>(
    async (items) => {
      const rows = await this.sql<{ id: string; outcome: string; charged: string; applied: boolean }>(
        'SELECT id, outcome, charged::text AS charged, applied FROM sy_finish_generations($1::jsonb, $2::timestamptz)',
        [JSON.stringify(items), this.clock()],
      );
      const byId = new Map(rows.map((r) => [r.id, r]));
      return items.map((i) => byId.get(String(i.id))!);
    },
    (i) => String(i.id),
  );

  /** The hot path's SQL: straight through the pool under Prisma when there is one. */
  private async sql<T>(text: string, params: unknown[]): Promise<T[]> {
    const pool = poolOf(this.db);
    if (pool) return (await pool.query(text, params)).rows as T[];
    return this.db.$queryRawUnsafe<T[]>(text, ...params);
  }

  /** Reserves and records a pending generation; returns the amount granted (402 when nothing fits). */
  async create(g: NewGeneration): Promise<Decimal> {
    const r = await this.createOrReplay(g);
    if ('replayOf' in r) throw new AppError('CONFLICT', `Idempotency-Key already used by generation ${r.replayOf}`);
    return r.granted;
  }

  /**
   * `create`, or — when the generation's Idempotency-Key is already held by the same request within 24 hours —
   * the id of the generation that request made (nothing reserved). Another request under the key is 409.
   */
  async createOrReplay(g: NewGeneration): Promise<Created> {
    const { granted, reason, existing_id } = await this.creates.submit({
      id: g.id,
      organization_id: g.organizationId,
      api_key_id: g.apiKeyId,
      user_id: g.userId,
      bound: toStorage(g.bound),
      minimum: toStorage(g.minimum ?? g.bound),
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
    if (reason === 'idempotent_replay') return { replayOf: existing_id! };
    if (reason === 'idempotency_conflict') {
      throw new AppError('CONFLICT', `Idempotency-Key "${g.idempotency!.key}" was already used with a different request (generation ${existing_id}); use a new key for a new request`, {
        metadata: { generation_id: existing_id },
      });
    }
    if (reason === 'not_found') throw new AppError('NOT_FOUND', 'Organization not found');
    if (reason) throw AppError.fromReason(reason as ReserveRefusal, REFUSALS[reason as ReserveRefusal]);
    this.metrics?.moneyReserved.inc(rub(granted));
    return { granted: money(granted) };
  }

  /** Deletes Idempotency-Keys past their 24 hours (they are already ignored; this keeps the table small). */
  async forgetExpiredIdempotencyKeys(now: Date = this.clock()): Promise<number> {
    return this.db.idempotencyKey.deleteMany({ where: { createdAt: { lt: new Date(now.getTime() - IDEMPOTENCY_TTL_MS) } } }).then((r) => r.count);
  }

  /** Status and stored outcome of a generation (replays of an Idempotency-Key), or null. */
  async state(id: string): Promise<GenerationState | null> {
    const rows = await this.sql<GenerationState>('SELECT id, status::text AS status, result, error FROM generations WHERE id = $1', [id]);
    return rows[0] ?? null;
  }

  /** pending → processing (media and background jobs, so pollers see progress). */
  async markProcessing(id: string, queueTimeMs?: number): Promise<boolean> {
    const n = await this.db.$executeRaw`
      UPDATE generations SET status = 'processing', started_at = ${this.clock()}::timestamptz,
        queue_time_ms = COALESCE(${queueTimeMs ?? null}::int, queue_time_ms)
      WHERE id = ${id} AND status = 'pending'`;
    return n > 0;
  }

  /**
   * Settles and records the end of a generation atomically. Returns `applied: false` when the generation had
   * already ended (its first ending stands).
   */
  async finish(id: string, f: Finish): Promise<{ applied: boolean; charged: Decimal }> {
    const item: Record<string, unknown> = {
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
    if (f.cost !== undefined) item.cost = toStorage(f.cost);
    const r = await this.finishes.submit(item);
    const charged = money(r.charged);
    if (r.applied && charged.greaterThan(0)) this.metrics?.moneyCharged.inc({ model: f.model ?? 'unknown' }, rub(charged));
    return { applied: r.applied, charged };
  }
}
