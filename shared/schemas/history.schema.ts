/**
 * Query of GET /v1/history/generations (interface.md, "GET /v1/history/generations"). Every parameter with its
 * default and bound; unknown parameters are refused. Dates are checked after ajv so the error names the field.
 */
import { AppError } from '../errors/app-error';

/** `embedding` and `upscale` are recorded too, so they can be filtered on (the interface lists the first four). */
export const HISTORY_REQUEST_TYPES = ['chat', 'image', 'video', 'audio', 'embedding', 'upscale'] as const;
/**
 * The interface's three filters plus the two internal states. `pending` means "not finished" (pending and
 * processing), `failed` means "ended without a result" (failed and cancelled), matching how items show them;
 * `processing` and `cancelled` select exactly that state.
 */
export const HISTORY_STATUS_FILTERS = ['completed', 'failed', 'pending', 'processing', 'cancelled'] as const;
export const HISTORY_SORT_FIELDS = ['createdAt', 'clientCost'] as const;
/** A bound that keeps OFFSET arithmetic exact; far beyond any real history. */
export const HISTORY_MAX_PAGE = 10_000_000;

export type HistoryRequestType = (typeof HISTORY_REQUEST_TYPES)[number];
export type HistoryStatusFilter = (typeof HISTORY_STATUS_FILTERS)[number];
export type HistorySortField = (typeof HISTORY_SORT_FIELDS)[number];

const isoDate = {
  type: 'string',
  maxLength: 64,
  description:
    'ISO 8601 date (2026-01-31) or date-time (2026-01-31T10:00:00Z, with offset or without: UTC). A date-only `dateTo` includes that whole day.',
} as const;

export const historyQuerySchema = {
  $id: 'HistoryGenerationsQuery',
  type: 'object',
  additionalProperties: false,
  properties: {
    page: { type: 'integer', minimum: 1, maximum: HISTORY_MAX_PAGE, default: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    dateFrom: isoDate,
    dateTo: isoDate,
    requestType: { type: 'string', enum: HISTORY_REQUEST_TYPES },
    status: { type: 'string', enum: HISTORY_STATUS_FILTERS },
    apiKeyId: { type: 'string', minLength: 1, maxLength: 100, description: 'Personal-account tokens only' },
    withoutApiKey: { type: 'boolean', description: 'true: only generations made without a key. Personal-account tokens only' },
    sortBy: { type: 'string', enum: HISTORY_SORT_FIELDS, default: 'createdAt' },
    sortOrder: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
  },
} as const;

export interface HistoryQuery {
  page: number;
  limit: number;
  dateFrom?: string;
  dateTo?: string;
  requestType?: HistoryRequestType;
  status?: HistoryStatusFilter;
  apiKeyId?: string;
  withoutApiKey?: boolean;
  sortBy: HistorySortField;
  sortOrder: 'asc' | 'desc';
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/**
 * Parses an ISO 8601 date or date-time to an instant. A missing offset means UTC (the service's clock), and
 * out-of-range parts (2026-02-30, 25:00) are refused rather than rolled over. `null` when not valid.
 */
export function parseIsoInstant(value: string): { at: Date; dateOnly: boolean } | null {
  const d = DATE_ONLY.exec(value);
  const t = d ? null : DATE_TIME.exec(value);
  if (!d && !t) return null;
  const [, y, mo, da] = (d ?? t)!;
  const hh = t ? Number(t[4]) : 0;
  const mi = t ? Number(t[5]) : 0;
  const ss = t?.[6] ? Number(t[6]) : 0;
  const ms = t?.[7] ? Math.floor(Number(`0.${t[7]}`) * 1000) : 0;
  if (hh > 23 || mi > 59 || ss > 59) return null;
  const utc = Date.UTC(Number(y), Number(mo) - 1, Number(da), hh, mi, ss, ms);
  const check = new Date(utc);
  if (check.getUTCFullYear() !== Number(y) || check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(da)) return null;
  let offsetMin = 0;
  const zone = t?.[8];
  if (zone && zone.toUpperCase() !== 'Z') {
    const m = /^([+-])(\d{2}):?(\d{2})?$/.exec(zone)!;
    const oh = Number(m[2]);
    const om = Number(m[3] ?? 0);
    if (oh > 23 || om > 59) return null;
    offsetMin = (m[1] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  return { at: new Date(utc - offsetMin * 60_000), dateOnly: !!d };
}

/**
 * The period as a half-open interval [createdFrom, createdBefore): `dateFrom` is inclusive; `dateTo` is inclusive
 * too — a date-only `dateTo` covers its whole day, a date-time covers that millisecond (timestamps keep ms).
 */
export function historyPeriod(q: Pick<HistoryQuery, 'dateFrom' | 'dateTo'>): { createdFrom?: Date; createdBefore?: Date } {
  const issues: Array<{ path: string; message: string }> = [];
  const from = q.dateFrom === undefined ? undefined : parseIsoInstant(q.dateFrom);
  const to = q.dateTo === undefined ? undefined : parseIsoInstant(q.dateTo);
  if (from === null) issues.push({ path: '/dateFrom', message: 'must be an ISO 8601 date or date-time' });
  if (to === null) issues.push({ path: '/dateTo', message: 'must be an ISO 8601 date or date-time' });
  if (issues.length) throw AppError.validation(issues);
  const createdFrom = from?.at;
  const createdBefore = to ? new Date(to.at.getTime() + (to.dateOnly ? 86_400_000 : 1)) : undefined;
  if (createdFrom && createdBefore && createdBefore <= createdFrom) {
    throw AppError.validation([{ path: '/dateTo', message: 'must not be before dateFrom' }]);
  }
  return { createdFrom, createdBefore };
}

/** Reply schemas (for the OpenAPI document; replies are built by HistoryService, not validated). */
const nullable = (type: string) => ({ type: [type, 'null'] }) as const;

export const historyItemSchema = {
  $id: 'HistoryItem',
  type: 'object',
  required: ['id', 'model', 'modelDisplayName', 'requestType', 'provider', 'status', 'cost', 'usage', 'generationTimeMs', 'createdAt', 'apiKeyShort'],
  properties: {
    id: { type: 'string' },
    model: { type: 'string', description: 'Model slug' },
    modelDisplayName: { type: 'string' },
    requestType: { type: 'string', enum: HISTORY_REQUEST_TYPES },
    provider: nullable('string'),
    status: { type: 'string', enum: ['completed', 'failed', 'pending'], description: 'Running shows as pending; cancelled as failed' },
    cost: { type: 'string', description: 'RUB, 6 decimal places' },
    usage: {
      type: ['object', 'null'],
      properties: { prompt_tokens: { type: 'integer' }, completion_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } },
    },
    generationTimeMs: nullable('integer'),
    createdAt: { type: 'string', format: 'date-time' },
    apiKeyName: { type: ['string', 'null'], description: 'Only under a personal-account token; null for a generation made without a key' },
    apiKeyShort: { type: ['string', 'null'], description: 'Last 6 characters of the key; null without a key' },
  },
} as const;

export const historyPageSchema = {
  $id: 'HistoryGenerationsPage',
  type: 'object',
  required: ['items', 'meta'],
  properties: {
    items: { type: 'array', items: historyItemSchema },
    meta: {
      type: 'object',
      required: ['page', 'limit', 'total', 'totalPages'],
      properties: {
        page: { type: 'integer' },
        limit: { type: 'integer' },
        total: { type: 'integer', description: 'Exact up to 10,000 matches; beyond, an estimate (header `X-Total-Is-Estimate: true`)' },
        totalPages: { type: 'integer' },
      },
    },
  },
} as const;

export const historyDetailSchema = {
  $id: 'HistoryGenerationDetail',
  type: 'object',
  properties: {
    id: { type: 'string' },
    organizationId: { type: 'string' },
    apiKeyId: nullable('string'),
    unifiedModelId: { type: 'string' },
    requestType: { type: 'string', enum: HISTORY_REQUEST_TYPES },
    apiType: { type: 'string', description: 'responses, chat_completions, embeddings, images, media, systemone' },
    responseMode: { type: 'string', enum: ['sync', 'stream', 'async', 'batch'] },
    status: { type: 'string', enum: ['completed', 'failed', 'pending'] },
    finishReason: nullable('string'),
    finalEndpointSlug: nullable('string'),
    serviceTier: { type: ['string', 'null'], description: "The processing tier the provider says served a text generation (OpenAI's service_tier: default, priority, flex), whose price it is charged; null otherwise" },
    usage: { type: ['object', 'null'], description: 'prompt_tokens, completion_tokens, total_tokens, their *_details, media units' },
    clientCost: { type: 'string', description: 'RUB, 6 decimal places' },
    generationTimeMs: nullable('integer'),
    latencyMs: nullable('integer'),
    queueTimeMs: nullable('integer'),
    isCancelled: { type: 'boolean' },
    createdAt: { type: 'string', format: 'date-time' },
    completedAt: { type: ['string', 'null'], format: 'date-time' },
    attemptsCount: { type: 'integer' },
    routing: { description: 'The routing decision: candidates and why each dropped one was dropped' },
    warnings: { type: 'array', items: { type: 'string' } },
    error: { type: ['object', 'null'] },
  },
  required: [
    'id', 'organizationId', 'apiKeyId', 'unifiedModelId', 'requestType', 'apiType', 'responseMode', 'status', 'finishReason', 'finalEndpointSlug', 'serviceTier',
    'usage', 'clientCost', 'generationTimeMs', 'latencyMs', 'queueTimeMs', 'isCancelled', 'createdAt', 'completedAt', 'attemptsCount', 'routing', 'warnings', 'error',
  ],
} as const;
