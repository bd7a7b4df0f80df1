import type { Db } from '../db/client';
import type { GenerationStatus } from '../db/generated/enums';
import { AppError } from '../errors/app-error';
import { toStorage, type Decimal, type MoneyLike } from '../money';
import { Ledger, RUNNING_STATUSES, type DrawnRow, type OpenRow } from '../billing/ledger';
import { generationById } from '../db/generation-reads';

export type RequestType = 'chat' | 'embedding' | 'image' | 'video' | 'audio' | 'upscale';
export type ApiType = 'responses' | 'chat_completions' | 'embeddings' | 'images' | 'media' | 'systemone';
/** `batch`: a line of a batch (docs/batches.md), run in the background like `async`, after interactive work. */
export type ResponseMode = 'sync' | 'stream' | 'async' | 'batch';

export interface NewGeneration {
  id: string;
  organizationId: string;
  apiKeyId: string | null;
  userId: string | null;
  model: string;
  unifiedModelId: string;
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
  idempotency?: IdempotentRequest;
}

export interface IdempotentRequest {
  key: string;
  /** Whose key it is (the API key's id, else `user <member id>`): another caller's same key is another key. */
  caller: string;
  /** sha256 of the caller, method, path and canonical body: the same key with another request is 409. */
  hash: string;
}

/** A new generation was reserved and recorded (at `createdAt`), or the Idempotency-Key already names one (`replayOf`). */
export type Created = { granted: Decimal; createdAt: Date } | { replayOf: string };

/** The one rule of "still running" lives with the ledger's closes (shared/billing/ledger.ts). */
export { RUNNING, RUNNING_STATUSES } from '../billing/ledger';

/** What a replay needs of an existing generation. */
export interface GenerationState {
  id: string;
  status: GenerationStatus;
  result: unknown;
  error: unknown;
  createdAt: Date;
}

/** How long an Idempotency-Key names its generation (docs/idempotency.md; the same 24 hours in the SQL). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;

/**
 * The life of a generation record. Creation reserves money and inserts the record in one transaction;
 * finishing settles the reservation and writes the outcome in one transaction (batched with others). Whoever finishes first (worker, cancel,
 * time-out) wins; later finishes change nothing, so nothing is charged twice.
 */
export class GenerationService {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
    /** Where the money moves (reservations with the insert, settlements with the ending). */
    private readonly ledger: Ledger = new Ledger(db, clock),
  ) {}

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
    const opened = await this.ledger.open(openRowOf(g));
    if ('conflictWith' in opened) {
      throw new AppError('CONFLICT', `Idempotency-Key "${g.idempotency!.key}" was already used with a different request (generation ${opened.conflictWith}); use a new key for a new request`, {
        metadata: { generation_id: opened.conflictWith },
      });
    }
    return opened;
  }

  /** Releases the leases of processes that stopped renewing them (the reaper). */
  sweepLeases(): Promise<number> {
    return this.ledger.sweepLeases();
  }

  /** Deletes Idempotency-Keys past their 24 hours (they are already ignored; this keeps the table small). */
  async forgetExpiredIdempotencyKeys(now: Date = this.clock()): Promise<number> {
    return this.db.idempotencyKey.deleteMany({ where: { createdAt: { lt: new Date(now.getTime() - IDEMPOTENCY_TTL_MS) } } }).then((r) => r.count);
  }

  /** Status and stored outcome of a generation (replays of an Idempotency-Key), or null. */
  async state(id: string): Promise<GenerationState | null> {
    return generationById(this.db, id, (where) => this.db.generation.findFirst({ where, select: { id: true, status: true, result: true, error: true, createdAt: true } }));
  }

  /** Which of these generations still run: not ended, or not recorded (yet) (the settlement journal's question). */
  async stillRunning(ids: readonly string[]): Promise<Set<string>> {
    const ended = await this.db.generation.findMany({ where: { id: { in: [...ids] }, status: { notIn: [...RUNNING_STATUSES] } }, select: { id: true } });
    const spent = new Set(ended.map((r) => r.id));
    return new Set(ids.filter((id) => !spent.has(id)));
  }

  /** pending → processing (media and background jobs, so pollers see progress). */
  async markProcessing(id: string, queueTimeMs?: number): Promise<boolean> {
    const n = await this.db.$executeRaw`
      UPDATE generations SET status = 'processing', started_at = ${this.clock()}::timestamptz,
        queue_time_ms = COALESCE(${queueTimeMs ?? null}::int, queue_time_ms)
      WHERE id = ${id} AND status = 'pending'`;
    return n > 0;
  }



}

/**
 * A new generation as the ledger's open row (`sy_ledger_group`'s columns); with `lease`, the row that records a
 * generation granted in memory from that lease (shared/billing/leases.ts).
 */
export function openRowOf(g: NewGeneration): OpenRow;
export function openRowOf(g: NewGeneration, lease: string): DrawnRow;
export function openRowOf(g: NewGeneration, lease?: string): OpenRow {
  const row: OpenRow = {
    id: g.id,
    organization_id: g.organizationId,
    api_key_id: g.apiKeyId,
    user_id: g.userId,
    bound: toStorage(g.bound),
    minimum: toStorage(g.minimum ?? g.bound),
    model: g.model,
    unified_model_id: g.unifiedModelId,
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
    idempotency_caller: g.idempotency?.caller ?? null,
    request_hash: g.idempotency?.hash ?? null,
  };
  if (lease !== undefined) row.lease = lease;
  return row;
}
