"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.HistoryService = exports.STATUS_FILTER_STATES = exports.EXACT_COUNT_LIMIT = void 0;
exports.publicStatus = publicStatus;
exports.historyUsage = historyUsage;
exports.historyDetailUsage = historyDetailUsage;
exports.apiKeyShort = apiKeyShort;
const client_1 = require("../db/generated/client");
const app_error_1 = require("../errors/app-error");
const money_1 = require("../billing/money");
/**
 * Matches are counted exactly up to this many; beyond it `total` is the planner's estimate. An exact count over a
 * large organization reads every matching index entry (≈80 ms for 500,000 rows), too slow for a page listing.
 */
exports.EXACT_COUNT_LIMIT = 10_000;
/** A member with more keys than this is listed with one `= ANY(...)` branch instead of one branch per key. */
const MAX_KEY_BRANCHES = 32;
/** History shows three states (interface.md): running is `pending`, cancelled is `failed` (with `isCancelled`). */
const PUBLIC_STATUS = {
    pending: 'pending',
    processing: 'pending',
    completed: 'completed',
    failed: 'failed',
    cancelled: 'failed',
};
/** Each status filter as the stored states it covers, so a filter matches exactly the items that show it. */
exports.STATUS_FILTER_STATES = {
    completed: ['completed'],
    failed: ['failed', 'cancelled'],
    pending: ['pending', 'processing'],
    processing: ['processing'],
    cancelled: ['cancelled'],
};
function publicStatus(s) {
    return PUBLIC_STATUS[s];
}
const firstNumber = (o, ...keys) => {
    for (const k of keys)
        if (typeof o[k] === 'number' && Number.isFinite(o[k]))
            return o[k];
    return undefined;
};
/**
 * Token usage in the OpenAI names the interface uses, from our canonical TokenUsage (`inputTokens`,
 * `outputTokens`, ...) — snake_case records are read too. Null when the generation has no token counts.
 */
function historyUsage(usage) {
    if (!usage || typeof usage !== 'object' || Array.isArray(usage))
        return null;
    const o = usage;
    const prompt = firstNumber(o, 'inputTokens', 'input_tokens', 'prompt_tokens');
    const completion = firstNumber(o, 'outputTokens', 'output_tokens', 'completion_tokens');
    if (prompt === undefined && completion === undefined)
        return null;
    const total = firstNumber(o, 'totalTokens', 'total_tokens') ?? (prompt ?? 0) + (completion ?? 0);
    return { prompt_tokens: prompt ?? 0, completion_tokens: completion ?? 0, total_tokens: total };
}
/** The detail's usage: the item's three counts plus the token details and media units when recorded. */
function historyDetailUsage(usage) {
    const tokens = historyUsage(usage);
    if (!usage || typeof usage !== 'object' || Array.isArray(usage))
        return null;
    const o = usage;
    const pick = (pairs) => {
        const out = {};
        for (const [name, keys] of pairs) {
            const v = firstNumber(o, ...keys);
            if (v !== undefined)
                out[name] = v;
        }
        return Object.keys(out).length ? out : undefined;
    };
    const promptDetails = pick([
        ['cached_tokens', ['cachedTokens', 'cached_tokens']],
        ['cache_write_tokens', ['cacheWriteTokens', 'cache_write_tokens']],
        ['audio_tokens', ['audioInputTokens', 'audio_input_tokens']],
    ]);
    const completionDetails = pick([
        ['reasoning_tokens', ['reasoningTokens', 'reasoning_tokens']],
        ['audio_tokens', ['audioOutputTokens', 'audio_output_tokens']],
    ]);
    const units = pick([
        ['input_units', ['inputUnits', 'input_units']],
        ['output_units', ['outputUnits', 'output_units']],
        ['duration_seconds', ['durationSeconds', 'duration_seconds']],
    ]);
    const out = { ...(tokens ?? {}) };
    if (tokens && promptDetails)
        out.prompt_tokens_details = promptDetails;
    if (tokens && completionDetails)
        out.completion_tokens_details = completionDetails;
    Object.assign(out, units);
    return Object.keys(out).length ? out : null;
}
/** `sy_...a1B2c3` → `a1B2c3` (decisions.md section 2). */
function apiKeyShort(label) {
    return label ? label.slice(-6) : null;
}
const sql = client_1.Prisma.sql;
function orderBy(sortBy, order, alias = '') {
    const p = alias ? `${alias}.` : '';
    const d = order === 'asc' ? 'ASC' : 'DESC';
    // Ties are broken by creation time then id, so pages never repeat or skip a row.
    return client_1.Prisma.raw(sortBy === 'clientCost' ? `${p}client_cost ${d}, ${p}created_at ${d}, ${p}id ${d}` : `${p}created_at ${d}, ${p}id ${d}`);
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
class HistoryService {
    db;
    constructor(db) {
        this.db = db;
    }
    async list(viewer, o) {
        const offset = (o.page - 1) * o.limit;
        const branches = await this.branches(viewer, o);
        const empty = () => ({ items: [], meta: { page: o.page, limit: o.limit, total: 0, totalPages: 0 }, totalIsEstimate: false });
        if (branches.length === 0)
            return empty();
        const matches = client_1.Prisma.join(branches.map((w) => sql `SELECT 1 FROM generations WHERE ${w}`), ' UNION ALL ');
        const count = async () => (await this.db.$queryRaw `SELECT count(*)::int AS n FROM (${matches} LIMIT ${exports.EXACT_COUNT_LIMIT + 1}) c`)[0].n;
        let counted;
        let rows;
        if (offset >= exports.EXACT_COUNT_LIMIT) {
            // A deep page: when the exact count ends before it, skip reading offset+limit rows of every branch.
            counted = await count();
            rows = counted <= exports.EXACT_COUNT_LIMIT ? [] : await this.page(branches, o, offset);
        }
        else {
            [counted, rows] = await Promise.all([count(), this.page(branches, o, offset)]);
        }
        let total = counted;
        let totalIsEstimate = false;
        if (counted > exports.EXACT_COUNT_LIMIT) {
            totalIsEstimate = true;
            total = Math.max(await this.estimate(matches), exports.EXACT_COUNT_LIMIT + 1, offset + rows.length);
        }
        const user = viewer.kind === 'user';
        const items = rows.map((r) => ({
            id: r.id,
            model: r.model,
            modelDisplayName: r.model_display_name,
            requestType: r.request_type,
            provider: r.provider,
            status: publicStatus(r.status),
            cost: (0, money_1.moneyString)(r.cost),
            usage: historyUsage(r.usage),
            generationTimeMs: r.generation_time_ms,
            createdAt: r.created_at.toISOString(),
            ...(user ? { apiKeyName: r.api_key_name } : {}),
            apiKeyShort: apiKeyShort(r.api_key_label),
        }));
        return { items, meta: { page: o.page, limit: o.limit, total, totalPages: Math.ceil(total / o.limit) }, totalIsEstimate };
    }
    /** The detail record; 404 for a generation the viewer may not see (it does not exist for them). */
    async get(viewer, id) {
        const g = await this.db.generation.findUnique({ where: { id } });
        if (!g || !(await this.visible(viewer, g)))
            throw new app_error_1.AppError('NOT_FOUND', `Generation ${id} not found`);
        return {
            id: g.id,
            organizationId: g.organizationId,
            apiKeyId: g.apiKeyId,
            unifiedModelId: g.unifiedModelId,
            requestType: g.requestType,
            apiType: g.apiType,
            responseMode: g.responseMode,
            status: publicStatus(g.status),
            finishReason: g.finishReason,
            finalEndpointSlug: g.finalEndpointSlug,
            usage: historyDetailUsage(g.usage),
            clientCost: (0, money_1.moneyString)(g.clientCost),
            generationTimeMs: g.generationTimeMs,
            latencyMs: g.latencyMs,
            queueTimeMs: g.queueTimeMs,
            isCancelled: g.isCancelled || g.status === 'cancelled',
            createdAt: g.createdAt.toISOString(),
            completedAt: g.completedAt?.toISOString() ?? null,
            attemptsCount: g.attemptsCount,
            routing: g.routing ?? null,
            warnings: Array.isArray(g.warnings) ? g.warnings.map(String) : [],
            error: g.error ?? null,
        };
    }
    async visible(viewer, g) {
        if (viewer.kind === 'key')
            return g.apiKeyId === viewer.keyId;
        if (g.organizationId !== viewer.organizationId)
            return false;
        if (viewer.role !== 'member')
            return true;
        if (!g.apiKeyId)
            return g.userId === viewer.userId;
        const key = await this.db.apiKey.findUnique({ where: { id: g.apiKeyId }, select: { userId: true } });
        return key?.userId === viewer.userId;
    }
    /**
     * The visible set as index-friendly parts. A member sees the generations of its own keys and those it made
     * without a key (generation.user_id); the gateway records a key's member as the generation's user, so this is
     * also "every generation whose user is the member".
     */
    async scope(viewer, o) {
        if (viewer.kind === 'key')
            return [sql `api_key_id = ${viewer.keyId}`];
        const member = viewer.role === 'member';
        if (o.apiKeyId !== undefined) {
            const key = await this.db.apiKey.findFirst({ where: { id: o.apiKeyId, organizationId: viewer.organizationId }, select: { userId: true } });
            // Another organization's key, or another member's: nothing to show (not an error, and no hint it exists).
            if (!key || (member && key.userId !== viewer.userId))
                return [];
            return [sql `api_key_id = ${o.apiKeyId}`];
        }
        if (!member)
            return [o.withoutApiKey ? sql `api_key_id IS NULL AND organization_id = ${viewer.organizationId}` : sql `organization_id = ${viewer.organizationId}`];
        const keyless = sql `api_key_id IS NULL AND user_id = ${viewer.userId}`;
        if (o.withoutApiKey)
            return [keyless];
        const keys = (await this.db.apiKey.findMany({ where: { organizationId: viewer.organizationId, userId: viewer.userId }, select: { id: true } })).map((k) => k.id);
        const own = keys.length > MAX_KEY_BRANCHES ? [sql `api_key_id = ANY(${keys}::text[])`] : keys.map((k) => sql `api_key_id = ${k}`);
        return [...own, keyless];
    }
    async branches(viewer, o) {
        const parts = await this.scope(viewer, o);
        const states = o.status ? exports.STATUS_FILTER_STATES[o.status] : [null];
        const common = [];
        if (o.requestType)
            common.push(sql `request_type = ${o.requestType}`);
        if (o.createdFrom)
            common.push(sql `created_at >= ${o.createdFrom}::timestamptz`);
        if (o.createdBefore)
            common.push(sql `created_at < ${o.createdBefore}::timestamptz`);
        return parts.flatMap((part) => states.map((s) => client_1.Prisma.join([part, ...(s ? [sql `status = ${s}::"GenerationStatus"`] : []), ...common], ' AND ')));
    }
    page(branches, o, offset) {
        const cols = client_1.Prisma.raw('id, model, model_display_name, request_type, provider, status, client_cost, usage, generation_time_ms, created_at, api_key_id');
        const inner = client_1.Prisma.join(branches.map((w) => sql `(SELECT ${cols} FROM generations WHERE ${w} ORDER BY ${orderBy(o.sortBy, o.sortOrder)} LIMIT ${offset + o.limit})`), ' UNION ALL ');
        return this.db.$queryRaw `
      SELECT g.id, g.model, g.model_display_name, g.request_type, g.provider, g.status::text AS status, g.client_cost::text AS cost,
        g.usage, g.generation_time_ms, g.created_at, g.api_key_id, k.name AS api_key_name, k.label AS api_key_label
      FROM (${inner}) g LEFT JOIN api_keys k ON k.id = g.api_key_id
      ORDER BY ${orderBy(o.sortBy, o.sortOrder, 'g')}
      LIMIT ${o.limit} OFFSET ${offset}`;
    }
    /** The planner's row estimate for the matches (statistics kept by ANALYZE / autovacuum). */
    async estimate(matches) {
        const rows = await this.db.$queryRaw `EXPLAIN (FORMAT JSON) ${matches}`;
        const raw = rows[0]?.['QUERY PLAN'];
        const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw);
        return Math.round(plan?.[0]?.Plan?.['Plan Rows'] ?? 0);
    }
}
exports.HistoryService = HistoryService;
