import { CACHED_PLAN, rawRows, type Db, type SqlReads } from '../db/client';
import { Prisma, type Generation, type GenerationStatus, type Role } from '../db/generated/client';
import { AppError } from '../errors/app-error';
import { moneyString } from '../money';
import { apiKeyShort, historyDetailUsage, historyUsage, publicStatus, type HistoryUsage, type PublicStatus } from './history-items';
import { RUNNING_STATUSES } from './generation.service';
import type { Pool } from 'pg';
import type { HistoryQuery, HistoryRequestType, HistorySortField, HistoryStatusFilter } from '../schemas/history.schema';
import { askedModel, generationById } from '../db/generation-reads';
import { ReadRouting } from '../db/read-routing';
import { generationMonths } from '../db/partitions';

/** Who is looking: an API key sees its own generations; a personal-account token sees per its role. */
export type HistoryViewer =
  | { kind: 'key'; organizationId: string; keyId: string }
  | { kind: 'user'; organizationId: string; userId: string; role: Role };

/** The route's query with its dates parsed (`apiKeyId`: personal-account tokens only, refused under a key). */
export interface HistoryListOptions extends Omit<HistoryQuery, 'dateFrom' | 'dateTo'> {
  /** Inclusive. */
  createdFrom?: Date;
  /** Exclusive. */
  createdBefore?: Date;
}

export interface HistoryItem {
  id: string;
  model: string;
  modelDisplayName: string;
  requestType: string;
  provider: string | null;
  status: PublicStatus;
  cost: string;
  usage: HistoryUsage | null;
  generationTimeMs: number | null;
  createdAt: string;
  /** Only under a personal-account token. */
  apiKeyName?: string | null;
  apiKeyShort: string | null;
}

export interface HistoryPage {
  items: HistoryItem[];
  meta: { page: number; limit: number; total: number; totalPages: number };
  /** True when `total` is the planner's estimate (more than EXACT_COUNT_LIMIT matches). */
  totalIsEstimate: boolean;
}

export interface HistoryDetail {
  id: string;
  organizationId: string;
  apiKeyId: string | null;
  unifiedModelId: string;
  requestType: string;
  apiType: string;
  responseMode: string;
  status: PublicStatus;
  finishReason: string | null;
  finalEndpointSlug: string | null;
  /** The processing tier the provider says served a text generation (OpenAI's `service_tier`), else null. */
  serviceTier: string | null;
  usage: Record<string, unknown> | null;
  clientCost: string;
  generationTimeMs: number | null;
  latencyMs: number | null;
  queueTimeMs: number | null;
  isCancelled: boolean;
  createdAt: string;
  completedAt: string | null;
  attemptsCount: number;
  routing: unknown;
  warnings: string[];
  error: unknown;
}

/**
 * Matches are counted exactly up to this many; beyond it `total` is the planner's estimate. An exact count over a
 * large organization reads every matching index entry (≈80 ms for 500,000 rows), too slow for a page listing.
 */
export const EXACT_COUNT_LIMIT = 10_000;
/** A member with more keys than this is listed with one `= ANY(...)` branch instead of one branch per key. */
const MAX_KEY_BRANCHES = 32;
/**
 * How long a listing trusts the months' span it read (generationMonths): a row a clock far off put in the default
 * partition is listed at most this late, and a month made or dropped meanwhile costs only the merge of every month.
 */
const MONTHS_READ_MS = 10_000;
/** How long a listing's estimated total (past EXACT_COUNT_LIMIT) stands for its next pages and repeats. */
const ESTIMATE_KEEP_MS = 30_000;
/** Reads a HistoryReader keeps at most (the oldest dropped first). */
const READS_KEPT = 1_000;

/** Each status filter as the stored states it covers, so a filter matches exactly the items that show it. */
export const STATUS_FILTER_STATES: Record<HistoryStatusFilter, GenerationStatus[]> = {
  completed: ['completed'],
  failed: ['failed', 'cancelled'],
  pending: [...RUNNING_STATUSES],
  processing: ['processing'],
  cancelled: ['cancelled'],
};

interface PageRow {
  id: string;
  model: string;
  asked_model: string;
  request_type: string;
  provider: string | null;
  status: GenerationStatus;
  cost: string;
  usage: unknown;
  generation_time_ms: number | null;
  created_at: Date;
  api_key_id: string | null;
  api_key_name: string | null;
  api_key_label: string | null;
}

const sql = Prisma.sql;
const CACHED = Prisma.raw(CACHED_PLAN); // listings are planned once per connection: planning cost more than running

function orderBy(sortBy: HistorySortField, order: 'asc' | 'desc', alias = ''): Prisma.Sql {
  const p = alias ? `${alias}.` : '';
  const d = order === 'asc' ? 'ASC' : 'DESC';
  // Ties are broken by creation time then id, so pages never repeat or skip a row.
  return Prisma.raw(sortBy === 'clientCost' ? `${p}client_cost ${d}, ${p}created_at ${d}, ${p}id ${d}` : `${p}created_at ${d}, ${p}id ${d}`);
}

/**
 * Generation history (interface.md, "History item" and "GET /v1/history/generations").
 *
 * A listing is a UNION ALL of "branches": one per (scope part × stored state of the status filter), each a
 * single-equality predicate with an index whose order is the requested order. Each branch is read with its own
 * ORDER BY ... LIMIT offset+limit, so PostgreSQL merges a few short index scans instead of sorting every match
 * (it does not merge ordered index scans of a UNION ALL or of `status IN (...)` by itself). Indexes:
 * prisma/migrations/*_history_indexes.
 */
export class HistoryService {
  private readonly reads: ReadRouting<HistoryReader>;

  /**
   * `pool`: on the same database as `db`, the listings read through it (shared/db/client.ts connectListings);
   * `replica`: DATABASE_READ_URL's (what it cannot give is read from `db`); `modelName`: a catalog model's display name.
   */
  constructor(db: Db, o: { pool?: Pool; replica?: SqlReads; onReplicaError?: (err: unknown) => void; clock?: () => Date; modelName?: (id: string) => string } = {}) {
    const missing = (e: unknown) => e instanceof AppError && e.code === 'NOT_FOUND';
    const reader = (d: SqlReads) => new HistoryReader(d, o.clock ?? (() => new Date()), o.modelName ?? ((id) => id));
    this.reads = new ReadRouting(reader({ db, pool: o.pool }), o.replica && reader(o.replica), o.onReplicaError, missing);
  }

  list(viewer: HistoryViewer, o: HistoryListOptions): Promise<HistoryPage> {
    return this.reads.read((r) => r.list(viewer, o));
  }

  /** The detail record; 404 for a generation the viewer may not see (it does not exist for them). */
  get(viewer: HistoryViewer, id: string): Promise<HistoryDetail> {
    return this.reads.read((r) => r.get(viewer, id));
  }
}

/** History's queries on one database: the primary, or a replica (HistoryService routes). */
class HistoryReader {
  /**
   * Reads kept for a while instead of asked at each listing: the months' span (MONTHS_READ_MS) and the large listings'
   * estimated totals, by their matches (ESTIMATE_KEEP_MS).
   */
  private readonly reads = new Map<string, { at: number; value: Promise<unknown> }>();
  private readonly db: Db;

  constructor(
    private readonly from: SqlReads,
    private readonly clock: () => Date,
    private readonly modelName: (id: string) => string,
  ) {
    this.db = from.db;
  }

  /** `read`'s answer, kept `ms` under `key`; a failed read is not kept (the next asks again). */
  private kept<T>(key: string, ms: number, read: () => Promise<T>): Promise<T> {
    const now = this.clock().getTime();
    const had = this.reads.get(key);
    if (had && now - had.at < ms) return had.value as Promise<T>;
    this.reads.delete(key);
    // The oldest goes first (a Map iterates in insertion order).
    if (this.reads.size >= READS_KEPT) this.reads.delete(this.reads.keys().next().value!);
    const entry = { at: now, value: read() };
    this.reads.set(key, entry);
    entry.value.catch(() => {
      if (this.reads.get(key) === entry) this.reads.delete(key);
    });
    return entry.value;
  }

  /** The months' span (generationMonths): a catalog read each listing would pay. */
  private span(): Promise<{ from: Date; before: Date } | undefined> {
    return this.kept('months', MONTHS_READ_MS, () => generationMonths(this.db));
  }

  async list(viewer: HistoryViewer, o: HistoryListOptions): Promise<HistoryPage> {
    const offset = (o.page - 1) * o.limit;
    const branches = await this.branches(viewer, o);
    const empty = (): HistoryPage => ({ items: [], meta: { page: o.page, limit: o.limit, total: 0, totalPages: 0 }, totalIsEstimate: false });
    if (branches.length === 0) return empty();

    const matches = Prisma.join(branches.map((w) => sql`SELECT 1 FROM generations WHERE ${w}`), ' UNION ALL ');
    const count = async () => (await rawRows<{ n: number }>(this.from, sql`${CACHED} SELECT count(*)::int AS n FROM (${matches} LIMIT ${EXACT_COUNT_LIMIT + 1}) c`))[0].n;
    // The total past EXACT_COUNT_LIMIT, asked beside the count (a round trip less for a large scope; a small one drops it).
    const estimated = this.estimate(matches);
    estimated.catch(() => undefined);
    let counted: number;
    let rows: PageRow[];
    if (offset >= EXACT_COUNT_LIMIT) {
      // A deep page: when the exact count ends before it, skip reading offset+limit rows of every branch.
      counted = await count();
      rows = counted <= EXACT_COUNT_LIMIT ? [] : await this.page(branches, o, offset);
    } else {
      [counted, rows] = await Promise.all([count(), this.page(branches, o, offset)]);
    }
    let total = counted;
    let totalIsEstimate = false;
    if (counted > EXACT_COUNT_LIMIT) {
      totalIsEstimate = true;
      total = Math.max(await estimated, EXACT_COUNT_LIMIT + 1, offset + rows.length);
    }
    const user = viewer.kind === 'user';
    const items = rows.map(
      (r): HistoryItem => ({
        id: r.id,
        model: r.model,
        modelDisplayName: this.modelName(r.asked_model),
        requestType: r.request_type,
        provider: r.provider,
        status: publicStatus(r.status),
        cost: moneyString(r.cost),
        usage: historyUsage(r.usage),
        generationTimeMs: r.generation_time_ms,
        createdAt: r.created_at.toISOString(),
        ...(user ? { apiKeyName: r.api_key_name } : {}),
        apiKeyShort: apiKeyShort(r.api_key_label),
      }),
    );
    return { items, meta: { page: o.page, limit: o.limit, total, totalPages: Math.ceil(total / o.limit) }, totalIsEstimate };
  }

  /** The detail record; 404 for a generation the viewer may not see (it does not exist for them). */
  async get(viewer: HistoryViewer, id: string): Promise<HistoryDetail> {
    const g = await generationById(this.db, id, (where) => this.db.generation.findFirst({ where }));
    if (!g || !(await this.visible(viewer, g))) throw new AppError('NOT_FOUND', `Generation ${id} not found`);
    return {
      id: g.id,
      organizationId: g.organizationId,
      apiKeyId: g.apiKeyId,
      unifiedModelId: askedModel(g),
      requestType: g.requestType,
      apiType: g.apiType,
      responseMode: g.responseMode,
      status: publicStatus(g.status),
      finishReason: g.finishReason,
      finalEndpointSlug: g.finalEndpointSlug,
      serviceTier: (g.result as { result?: { serviceTier?: string } } | null)?.result?.serviceTier ?? null,
      usage: historyDetailUsage(g.usage),
      clientCost: moneyString(g.clientCost),
      generationTimeMs: g.generationTimeMs,
      latencyMs: g.latencyMs,
      queueTimeMs: g.queueTimeMs,
      isCancelled: g.isCancelled || g.status === 'cancelled',
      createdAt: g.createdAt.toISOString(),
      completedAt: g.completedAt?.toISOString() ?? null,
      attemptsCount: g.attemptsCount,
      routing: g.routing ?? null,
      warnings: Array.isArray(g.warnings) ? (g.warnings as unknown[]).map(String) : [],
      error: g.error ?? null,
    };
  }

  private async visible(viewer: HistoryViewer, g: Generation): Promise<boolean> {
    if (viewer.kind === 'key') return g.apiKeyId === viewer.keyId;
    if (g.organizationId !== viewer.organizationId) return false;
    if (viewer.role !== 'member') return true;
    if (!g.apiKeyId) return g.userId === viewer.userId;
    const key = await this.db.apiKey.findUnique({ where: { id: g.apiKeyId }, select: { userId: true } });
    return key?.userId === viewer.userId;
  }

  /**
   * The visible set as index-friendly parts. A member sees the generations of its own keys and those it made
   * without a key (generation.user_id); the gateway records a key's member as the generation's user, so this is
   * also "every generation whose user is the member".
   */
  private async scope(viewer: HistoryViewer, o: HistoryListOptions): Promise<Prisma.Sql[]> {
    if (viewer.kind === 'key') return [sql`api_key_id = ${viewer.keyId}`];
    const member = viewer.role === 'member';
    if (o.apiKeyId !== undefined) {
      const key = await this.db.apiKey.findFirst({ where: { id: o.apiKeyId, organizationId: viewer.organizationId }, select: { userId: true } });
      // Another organization's key, or another member's: nothing to show (not an error, and no hint it exists).
      if (!key || (member && key.userId !== viewer.userId)) return [];
      return [sql`api_key_id = ${o.apiKeyId}`];
    }
    if (!member) return [o.withoutApiKey ? sql`api_key_id IS NULL AND organization_id = ${viewer.organizationId}` : sql`organization_id = ${viewer.organizationId}`];
    const keyless = sql`api_key_id IS NULL AND user_id = ${viewer.userId}`;
    if (o.withoutApiKey) return [keyless];
    const keys = (await this.db.apiKey.findMany({ where: { organizationId: viewer.organizationId, userId: viewer.userId }, select: { id: true } })).map((k) => k.id);
    const own = keys.length > MAX_KEY_BRANCHES ? [sql`api_key_id = ANY(${keys}::text[])`] : keys.map((k) => sql`api_key_id = ${k}`);
    return [...own, keyless];
  }

  private async branches(viewer: HistoryViewer, o: HistoryListOptions): Promise<Prisma.Sql[]> {
    const [parts, months] = await Promise.all([this.scope(viewer, o), this.span()]);
    const states: Array<GenerationStatus | null> = o.status ? STATUS_FILTER_STATES[o.status] : [null];
    const common: Prisma.Sql[] = [];
    if (o.requestType) common.push(sql`request_type = ${o.requestType}`);
    if (o.createdFrom) common.push(sql`created_at >= ${o.createdFrom}::timestamptz`);
    if (o.createdBefore) common.push(sql`created_at < ${o.createdBefore}::timestamptz`);
    // Within the months (no default partition): newest or oldest first reads months in order, only until the page is full.
    if (months) common.push(sql`created_at >= ${months.from}::timestamptz AND created_at < ${months.before}::timestamptz`);
    return parts.flatMap((part) =>
      states.map((s) => Prisma.join([part, ...(s ? [sql`status = ${s}::"GenerationStatus"`] : []), ...common], ' AND ')),
    );
  }

  private page(branches: Prisma.Sql[], o: HistoryListOptions, offset: number): Promise<PageRow[]> {
    const cols = Prisma.raw(
      'id, model, unified_model_id, request_type, provider, status, client_cost, usage, generation_time_ms, created_at, api_key_id',
    );
    const inner = Prisma.join(
      branches.map((w) => sql`(SELECT ${cols} FROM generations WHERE ${w} ORDER BY ${orderBy(o.sortBy, o.sortOrder)} LIMIT ${offset + o.limit})`),
      ' UNION ALL ',
    );
    return rawRows<PageRow>(this.from, sql`${CACHED}
      SELECT g.id, g.model, COALESCE(g.unified_model_id, g.model) AS asked_model, g.request_type, g.provider, g.status::text AS status, g.client_cost::text AS cost,
        g.usage, g.generation_time_ms, g.created_at, g.api_key_id, k.name AS api_key_name, k.label AS api_key_label
      FROM (${inner}) g LEFT JOIN api_keys k ON k.id = g.api_key_id
      ORDER BY ${orderBy(o.sortBy, o.sortOrder, 'g')}
      LIMIT ${o.limit} OFFSET ${offset}`);
  }

  /**
   * The planner's row estimate for the matches (statistics kept by ANALYZE / autovacuum). Planning a member's listing
   * over the months costs PostgreSQL about 3 ms, more than the count and the page together, so one listing's estimate
   * serves its pages and repeats for ESTIMATE_KEEP_MS.
   */
  private estimate(matches: Prisma.Sql): Promise<number> {
    return this.kept(`estimate\n${matches.text}\n${JSON.stringify(matches.values)}`, ESTIMATE_KEEP_MS, () => this.planned(matches));
  }

  private async planned(matches: Prisma.Sql): Promise<number> {
    const rows = await rawRows<{ 'QUERY PLAN': unknown }>(this.from, sql`EXPLAIN (FORMAT JSON) ${matches}`);
    const raw = rows[0]?.['QUERY PLAN'];
    const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan?: { 'Plan Rows'?: number } }>;
    return Math.round(plan?.[0]?.Plan?.['Plan Rows'] ?? 0);
  }
}
