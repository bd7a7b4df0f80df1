import type { Db } from '../db/client';
import { AppError } from '../errors/app-error';
import { money, toStorage, type Decimal, type MoneyLike } from '../billing/money';
import type { ReserveRefusal } from '../billing/ledger';
import { rub, type Metrics } from '../metrics/metrics';

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

const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

/**
 * The life of a generation record. Creation reserves money and inserts the record in ONE statement; finishing
 * settles the reservation and writes the outcome in ONE statement. Whoever finishes first (worker, cancel,
 * time-out) wins; later finishes change nothing, so nothing is charged twice.
 */
export class GenerationService {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
    /** Money counters (`switchyard_money_*`): reservations made, charges actually applied. */
    private readonly metrics?: Pick<Metrics, 'moneyReserved' | 'moneyCharged'>,
  ) {}

  /** Reserves and records a pending generation; returns the amount granted (402 when nothing fits). */
  async create(g: NewGeneration): Promise<Decimal> {
    const now = this.clock();
    const rows = await this.db.$queryRaw<Array<{ granted: string; reason: string | null }>>`
      WITH r AS (
        SELECT * FROM sy_reserve(${g.id}, ${g.organizationId}, ${g.apiKeyId}, ${g.userId},
          ${toStorage(g.bound)}::numeric, ${toStorage(g.minimum ?? g.bound)}::numeric, ${now}::timestamptz)
      ), ins AS (
        INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id, model_display_name,
          request_type, api_type, response_mode, status, reserved_amount, request, warnings, routing, call_back_url,
          source_generation_id, previous_response_id, trace_id, created_at)
        SELECT ${g.id}, ${g.organizationId}, ${g.apiKeyId}, ${g.userId}, ${g.model}, ${g.unifiedModelId}, ${g.modelDisplayName},
          ${g.requestType}, ${g.apiType}, ${g.responseMode}, 'pending', r.granted, ${json(g.request)}::jsonb,
          ${json(g.warnings)}::jsonb, ${json(g.routing)}::jsonb, ${g.callBackUrl ?? null}, ${g.sourceGenerationId ?? null},
          ${g.previousResponseId ?? null}, ${g.traceId ?? null}, ${now}::timestamptz
        FROM r WHERE r.reason IS NULL
        ON CONFLICT (id) DO NOTHING
      )
      SELECT granted::text AS granted, reason FROM r`;
    const { granted, reason } = rows[0];
    if (reason === 'not_found') throw new AppError('NOT_FOUND', 'Organization not found');
    if (reason) throw AppError.fromReason(reason as ReserveRefusal, REFUSALS[reason as ReserveRefusal]);
    this.metrics?.moneyReserved.inc(rub(granted));
    return money(granted);
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
    const now = this.clock();
    const release = f.cost === undefined;
    const rows = await this.db.$queryRaw<Array<{ outcome: string; charged: string; updated: number }>>`
      WITH s AS (
        SELECT * FROM sy_settle(${id}, ${toStorage(release ? 0 : (f.cost ?? 0))}::numeric, ${release}, ${now}::timestamptz)
      ), u AS (
        UPDATE generations g SET
          status = ${f.status}::"GenerationStatus",
          client_cost = s.charged,
          result = COALESCE(${json(f.result)}::jsonb, g.result),
          usage = COALESCE(${json(f.usage)}::jsonb, g.usage),
          error = COALESCE(${json(f.error)}::jsonb, g.error),
          warnings = COALESCE(${json(f.warnings)}::jsonb, g.warnings),
          routing = COALESCE(${json(f.routing)}::jsonb, g.routing),
          model = COALESCE(${f.model ?? null}, g.model),
          provider = COALESCE(${f.provider ?? null}, g.provider),
          final_endpoint_slug = COALESCE(${f.finalEndpointSlug ?? null}, g.final_endpoint_slug),
          finish_reason = COALESCE(${f.finishReason ?? null}, g.finish_reason),
          attempts_count = COALESCE(${f.attemptsCount ?? null}::int, g.attempts_count),
          latency_ms = COALESCE(${f.latencyMs ?? null}::int, g.latency_ms),
          queue_time_ms = COALESCE(${f.queueTimeMs ?? null}::int, g.queue_time_ms),
          generation_time_ms = COALESCE(${f.generationTimeMs ?? null}::int, g.generation_time_ms),
          upstream_id = COALESCE(${f.upstreamId ?? null}, g.upstream_id),
          is_cancelled = ${f.status === 'cancelled'},
          completed_at = ${now}::timestamptz
        FROM s
        WHERE g.id = ${id} AND g.status IN ('pending', 'processing') AND s.outcome IN ('charged', 'released', 'not_found')
        RETURNING 1
      )
      SELECT s.outcome, s.charged::text AS charged, (SELECT count(*) FROM u)::int AS updated FROM s`;
    const r = rows[0];
    const charged = money(r.charged);
    if (r.updated > 0 && charged.greaterThan(0)) this.metrics?.moneyCharged.inc(rub(charged));
    return { applied: r.updated > 0, charged };
  }
}
