/**
 * Anthropic's Message Batches (https://docs.anthropic.com/en/api/creating-message-batches): the lines sent in the
 * create itself (`{requests: [{custom_id, params}]}`), polled, cancelled, and the JSONL results read. Pure.
 */
import type { BatchApiOperation, ListedBatch, UpstreamBatch, UpstreamBatchLine, UpstreamBatchResult } from '../adapter.types';
import type { HttpRequestSpec } from '../provider.types';
import { matchByShape, parseListPage } from '../batch-find';
import { batchResultLine, isRecord, malformed, num, rec, str, unsupported } from '../mapper-utils';
import { anthropicHeaders } from './request.mapper';

/** `processing_status`: https://docs.anthropic.com/en/api/retrieving-message-batches */
export const ANTHROPIC_BATCH_STATUS: ReadonlyMap<string, UpstreamBatch['status']> = new Map<string, UpstreamBatch['status']>([
  ['in_progress', 'running'],
  ['canceling', 'running'],
  ['ended', 'ended'],
]);

/** An errored result's `error.type` → the status the synchronous call would have answered (https://docs.anthropic.com/en/api/errors). */
export const ANTHROPIC_ERROR_STATUS: ReadonlyMap<string, number> = new Map([
  ['invalid_request_error', 400],
  ['authentication_error', 401],
  ['billing_error', 402],
  ['permission_error', 403],
  ['not_found_error', 404],
  ['request_too_large', 413],
  ['rate_limit_error', 429],
  ['api_error', 500],
  ['timeout_error', 504],
  ['overloaded_error', 529],
]);

/** Anthropic's rule for a request's `custom_id`. */
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

const segment = (id: string): string => encodeURIComponent(id);
const batchPath = (batchId: string): string => `/messages/batches/${segment(batchId)}`;

function requestOf(line: UpstreamBatchLine): { custom_id: string; params: Record<string, unknown> } {
  if (!CUSTOM_ID.test(line.customId)) return unsupported(`Anthropic batch custom_id must match ${CUSTOM_ID.source}: ${line.customId}`);
  if (line.request.method !== 'POST' || !line.request.path.startsWith('/messages') || !isRecord(line.request.body)) {
    return unsupported(`Anthropic batches take POST /messages requests, not ${line.request.method} ${line.request.path}`);
  }
  // `params` is the Messages request without `stream` (a batch never streams).
  const { stream: _stream, ...params } = line.request.body;
  return { custom_id: line.customId, params };
}

export function buildMessageBatchCreate(input: { lines: UpstreamBatchLine[] }, apiKey: string): HttpRequestSpec {
  if (input.lines.length === 0) return unsupported('an Anthropic message batch needs at least one request');
  return { method: 'POST', path: '/messages/batches', headers: anthropicHeaders(apiKey), body: { requests: input.lines.map(requestOf) } };
}

export const buildMessageBatchGet = (batchId: string, apiKey: string): HttpRequestSpec => ({ method: 'GET', path: batchPath(batchId), headers: anthropicHeaders(apiKey) });

export const buildMessageBatchCancel = (batchId: string, apiKey: string): HttpRequestSpec => ({ method: 'POST', path: `${batchPath(batchId)}/cancel`, headers: anthropicHeaders(apiKey) });

/** The Message Batch object; once `ended`, its results are read from the batch's own path (not `results_url`'s host). */
export function parseMessageBatch(json: unknown, apiKey: string): UpstreamBatch {
  const body = rec(json);
  const id = str(body.id);
  const raw = str(body.processing_status);
  const status = raw === undefined ? undefined : ANTHROPIC_BATCH_STATUS.get(raw);
  if (!id || !status) return malformed('Anthropic message batch without id or known processing_status', json);
  const results: HttpRequestSpec[] = status === 'ended' ? [{ method: 'GET', path: `${batchPath(id)}/results`, headers: anthropicHeaders(apiKey), replyAs: 'text' }] : [];
  return { id, status, results };
}

/**
 * A page of `GET /messages/batches` (https://docs.anthropic.com/en/api/listing-message-batches): most recently created
 * first; `after_id` (the page before's `last_id`) is the next, older, page.
 */
export const buildMessageBatchList = (after: string | undefined, apiKey: string): HttpRequestSpec => ({
  method: 'GET',
  path: `/messages/batches?limit=100${after ? `&after_id=${encodeURIComponent(after)}` : ''}`,
  headers: anthropicHeaders(apiKey),
});

/** `request_counts` splits a batch's requests by state: https://docs.anthropic.com/en/api/retrieving-message-batches */
const REQUEST_STATES = ['processing', 'succeeded', 'errored', 'canceled', 'expired'];

/** How many requests a batch holds: the sum over the states, when the list gives each. */
function requestsOf(counts: unknown): number | undefined {
  const n = REQUEST_STATES.map((k) => num(rec(counts)[k]));
  return n.every((x) => x !== undefined) ? (n as number[]).reduce((a, b) => a + b, 0) : undefined;
}

/** A page of the list, in our words: each batch's creation (`created_at`, RFC 3339) and request count (no tag: none is kept); the next page. */
export const parseMessageBatchList = (json: unknown): { batches: ListedBatch[]; next?: string } =>
  parseListPage(json, 'Anthropic message', (b) => {
    const created = Date.parse(str(b.created_at) ?? '');
    const requests = requestsOf(b.request_counts);
    return { ...(Number.isFinite(created) && { createdMs: created }), ...(requests !== undefined && { requests }) };
  });

/**
 * One results line: `{"custom_id", "result": {"type": "succeeded", "message"}}`, `errored` with the error body the
 * synchronous call would have answered, or `canceled` / `expired` (the request never ran: it may be retried).
 */
export function parseMessageBatchResultLine(line: string): UpstreamBatchResult {
  const { o, customId } = batchResultLine(line, 'Anthropic');
  const result = rec(o.result);
  switch (result.type) {
    case 'succeeded':
      if (!isRecord(result.message)) return malformed('Anthropic succeeded batch result without message', o);
      return { customId, ok: true, body: result.message };
    case 'errored': {
      const error = rec(rec(result.error).error);
      const type = str(error.type);
      const status = (type && ANTHROPIC_ERROR_STATUS.get(type)) || 500;
      const message = str(error.message) ?? type ?? 'the request errored';
      return { customId, ok: false, status, message, retryable: status >= 500 || status === 429 };
    }
    case 'canceled':
      return { customId, ok: false, message: 'the batch was canceled before this request ran', retryable: true };
    case 'expired':
      return { customId, ok: false, message: 'the batch expired before this request ran', retryable: true };
    default:
      return malformed('Anthropic batch result line with an unknown result type', o);
  }
}

export const anthropicBatch: BatchApiOperation = {
  operations: ['text'],
  buildCreate: buildMessageBatchCreate,
  buildGet: buildMessageBatchGet,
  buildCancel: buildMessageBatchCancel,
  parseBatch: parseMessageBatch,
  parseResultLine: parseMessageBatchResultLine,
  // Message Batches keep no tag (no `metadata`; their requests are readable only once ended): found by their shape.
  find: { build: buildMessageBatchList, parse: parseMessageBatchList, match: matchByShape },
};
