/**
 * OpenAI's Batch API (https://platform.openai.com/docs/api-reference/batch): the lines uploaded as a JSONL file
 * (`POST /files`, `purpose=batch`), a batch created from it (`POST /batches`), polled, cancelled, and its output and
 * error files read. Pure: each function describes a request or reads a reply.
 */
import type { BatchApiOperation, ListedBatch, UpstreamBatch, UpstreamBatchLine, UpstreamBatchResult } from '../adapter.types';
import { matchByTag, parseListPage } from '../batch-find';
import type { HttpRequestSpec } from '../provider.types';
import { arr, batchResultLine, isRecord, malformed, num, rec, str, unsupported } from '../mapper-utils';
import { extractOpenAIError } from './response.mapper';

/** https://platform.openai.com/docs/guides/batch#4-check-the-status-of-a-batch */
export const OPENAI_BATCH_STATUS: ReadonlyMap<string, UpstreamBatch['status']> = new Map<string, UpstreamBatch['status']>([
  ['validating', 'running'],
  ['in_progress', 'running'],
  ['finalizing', 'running'],
  ['cancelling', 'running'],
  ['completed', 'ended'],
  ['cancelled', 'ended'],
  ['expired', 'ended'],
  ['failed', 'failed'],
]);

const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/embeddings', '/v1/responses'];

const headers = (apiKey: string): Record<string, string> => ({ authorization: `Bearer ${apiKey}`, accept: 'application/json' });
const segment = (id: string): string => encodeURIComponent(id);

/** A line's `url`: `/v1` and the path its synchronous request is sent to (`/chat/completions` → `/v1/chat/completions`). */
function lineUrl(line: UpstreamBatchLine): string {
  const path = line.request.path.split('?')[0] ?? '';
  const url = `/v1${path.startsWith('/') ? path : `/${path}`}`;
  if (line.request.method !== 'POST' || line.request.body === undefined || !BATCH_ENDPOINTS.includes(url)) {
    return unsupported(`OpenAI batches take POST ${BATCH_ENDPOINTS.join(', ')} with a JSON body, not ${line.request.method} ${url}`);
  }
  return url;
}

/** The batch's endpoint: the one url all its lines share (a batch runs one endpoint). */
function endpointOf(lines: UpstreamBatchLine[]): string {
  if (lines.length === 0) return unsupported('an OpenAI batch needs at least one line');
  const urls = new Set(lines.map(lineUrl));
  if (urls.size > 1) return unsupported(`an OpenAI batch runs one endpoint, these lines name ${[...urls].join(', ')}`);
  return [...urls][0] as string;
}

export function buildBatchUpload(lines: UpstreamBatchLine[], apiKey: string): HttpRequestSpec {
  const url = endpointOf(lines);
  const data = lines.map((line) => `${JSON.stringify({ custom_id: line.customId, method: 'POST', url, body: line.request.body })}\n`).join('');
  return {
    method: 'POST',
    path: '/files',
    headers: headers(apiKey),
    multipart: { fields: { purpose: 'batch' }, file: { field: 'file', filename: 'batch.jsonl', contentType: 'application/jsonl', data } },
  };
}

/** The file object `POST /files` answers: its `id`. */
export function parseBatchUpload(json: unknown): string {
  const id = str(rec(json).id);
  return id ?? malformed('OpenAI file upload without id', json);
}

/** The `metadata` key a batch's tag (our chunk's id) is kept under: a re-run finds its batch by it (`matchByTag`). */
export const TAG_KEY = 'switchyard_chunk';

export function buildBatchCreate(input: { lines: UpstreamBatchLine[]; fileId?: string; tag?: string }, apiKey: string): HttpRequestSpec {
  if (!input.fileId) return unsupported('an OpenAI batch is created from an uploaded file (buildUpload first)');
  const body = { input_file_id: input.fileId, endpoint: endpointOf(input.lines), completion_window: '24h', ...(input.tag && { metadata: { [TAG_KEY]: input.tag } }) };
  return { method: 'POST', path: '/batches', headers: { ...headers(apiKey), 'content-type': 'application/json' }, body };
}

export const buildBatchGet = (batchId: string, apiKey: string): HttpRequestSpec => ({ method: 'GET', path: `/batches/${segment(batchId)}`, headers: headers(apiKey) });

export const buildBatchCancel = (batchId: string, apiKey: string): HttpRequestSpec => ({ method: 'POST', path: `/batches/${segment(batchId)}/cancel`, headers: headers(apiKey) });

/** The batch object (https://platform.openai.com/docs/api-reference/batch/object). */
export function parseBatch(json: unknown, apiKey: string): UpstreamBatch {
  const body = rec(json);
  const id = str(body.id);
  const raw = str(body.status);
  const status = raw === undefined ? undefined : OPENAI_BATCH_STATUS.get(raw);
  if (!id || !status) return malformed('OpenAI batch without id or known status', json);
  const batch: UpstreamBatch = { id, status, results: [] };
  if (status === 'ended') {
    // A file exists only when it has a line: no output file when every line failed, no error file when none did.
    for (const fileId of [str(body.output_file_id), str(body.error_file_id)]) {
      if (fileId) batch.results.push({ method: 'GET', path: `/files/${segment(fileId)}/content`, headers: headers(apiKey), replyAs: 'text' });
    }
  }
  if (status === 'failed') {
    const messages = arr(rec(body.errors).data).map((e) => str(rec(e).message)).filter((m): m is string => !!m);
    batch.error = messages.length > 0 ? messages.join('; ') : 'the batch failed';
  }
  return batch;
}

/** A page of `GET /batches` (https://platform.openai.com/docs/api-reference/batch/list), newest first, 100 at most. */
export const buildBatchList = (after: string | undefined, apiKey: string): HttpRequestSpec => ({
  method: 'GET',
  path: `/batches?limit=100${after ? `&after=${encodeURIComponent(after)}` : ''}`,
  headers: headers(apiKey),
});

/** A page of the list, in our words (each batch with its creation, request count and tag), and the next page (`has_more`: after its last id). */
export const parseBatchList = (json: unknown): { batches: ListedBatch[]; next?: string } =>
  parseListPage(json, 'OpenAI', (b) => {
    const created = num(b.created_at);
    const requests = num(rec(b.request_counts).total);
    const tag = str(rec(b.metadata)[TAG_KEY]);
    return { ...(created !== undefined && { createdMs: created * 1000 }), ...(requests !== undefined && { requests }), ...(tag !== undefined && { tag }) };
  });

/** Whether a line's failure may be tried again elsewhere: the provider's 5xx, 429 and 408, or no status at all. */
const retryableStatus = (status: number | undefined): boolean => status === undefined || status >= 500 || status === 429 || status === 408;

/**
 * One line of an output or error file: `{"custom_id", "response": {"status_code", "body"}, "error"}`. A non-200
 * response is the line's failure with its status; an `error` object (`batch_expired`, `batch_cancelled`) means the
 * line never ran, which may be retried.
 */
export function parseBatchResultLine(line: string): UpstreamBatchResult {
  const { o, customId } = batchResultLine(line, 'OpenAI');
  const response = isRecord(o.response) ? o.response : undefined;
  const status = num(response?.status_code);
  if (isRecord(o.error)) {
    const message = str(o.error.message) ?? str(o.error.code) ?? 'the line did not run';
    return { customId, ok: false, message, retryable: retryableStatus(status), ...(status !== undefined && { status }) };
  }
  if (!response || status === undefined) return malformed('OpenAI batch result line without response or error', o);
  if (status >= 200 && status < 300) return { customId, ok: true, body: response.body };
  const message = extractOpenAIError(response.body).message ?? `HTTP ${status}`;
  return { customId, ok: false, status, message, retryable: retryableStatus(status) };
}

export const openaiBatch: BatchApiOperation = {
  operations: ['text', 'embeddings'],
  buildUpload: buildBatchUpload,
  parseUpload: parseBatchUpload,
  buildCreate: buildBatchCreate,
  buildGet: buildBatchGet,
  buildCancel: buildBatchCancel,
  parseBatch,
  parseResultLine: parseBatchResultLine,
  find: { build: buildBatchList, parse: parseBatchList, match: matchByTag },
};
