/**
 * OpenAI's Files and Batch APIs, under `/openai/v1`: `POST /files` (multipart, `purpose=batch`), `GET /files/{id}`,
 * `GET /files/{id}/content`; `POST /batches`, `GET /batches`, `GET /batches/{id}`, `POST /batches/{id}/cancel`.
 * Each line is answered by the format's synchronous handler for its url (openai.ts), so a line's body is what the
 * direct call answers. https://platform.openai.com/docs/api-reference/batch
 */
import { isObj, newId, num, obj, sendJson, sendRaw, str, unixNow } from './common';
import type { Ctx, Json } from './common';
import type { FakeKnobs } from './fake-knobs';
import { batchPhase, parseMultipart, runLine, serially } from './batch-lines';
import type { OpenAIBatch, OpenAIFile, OpenAIBatchLine as Line } from './fake-state';

type Route = (ctx: Ctx) => Promise<void> | void;
type ErrorReply = (ctx: Ctx, status: number, message?: string, param?: string | null, code?: string | null) => void;

const ENDPOINTS = ['/v1/chat/completions', '/v1/embeddings', '/v1/responses'];
const FILE_PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'];
const MAX_KEPT = 10_000;

const fileObject = (f: OpenAIFile): Json => ({
  id: f.id,
  object: 'file',
  bytes: Buffer.byteLength(f.content),
  created_at: f.createdAt,
  filename: f.filename,
  purpose: f.purpose,
  status: 'processed',
  expires_at: null,
  status_details: null,
});

function keep<T>(map: Map<string, T>, id: string, value: T): void {
  map.set(id, value);
  if (map.size > MAX_KEPT) map.delete(map.keys().next().value as string);
}

function upload(ctx: Ctx, error: ErrorReply): void {
  const parts = typeof ctx.body === 'string' ? parseMultipart(ctx.body, ctx.req.headers['content-type']) : null;
  if (!parts) return error(ctx, 400, 'Invalid multipart/form-data body.', null, null);
  const purpose = parts.find((p) => p.name === 'purpose' && p.filename === undefined)?.data;
  const file = parts.find((p) => p.name === 'file' && p.filename !== undefined);
  if (!purpose) return error(ctx, 400, "Missing required parameter: 'purpose'.", 'purpose', 'missing_required_parameter');
  if (!FILE_PURPOSES.includes(purpose)) return error(ctx, 400, `Invalid value: '${purpose}'. Supported values are: ${FILE_PURPOSES.map((p) => `'${p}'`).join(', ')}.`, 'purpose', 'invalid_value');
  if (!file) return error(ctx, 400, "Missing required parameter: 'file'.", 'file', 'missing_required_parameter');
  const f: OpenAIFile = { id: newId('file-'), filename: file.filename ?? 'file', purpose, createdAt: unixNow(), content: file.data };
  keep(ctx.shared.openaiFiles, f.id, f);
  ctx.shared.batchStats.uploads++;
  sendJson(ctx, 200, fileObject(f));
}

/** The input file's lines, or why the batch fails validation (OpenAI's `errors.data` items). */
function readLines(content: string, endpoint: string): { lines: Line[]; invalid: Json[] } {
  const lines: Line[] = [];
  const invalid: Json[] = [];
  const seen = new Set<string>();
  const bad = (line: number, code: string, message: string, param: string | null = null): void => void invalid.push({ code, message, param, line });
  content.split('\n').forEach((text, i) => {
    if (text.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return bad(i + 1, 'invalid_json_line', 'This line is not parseable as valid JSON.');
    }
    const o = obj(parsed);
    const customId = str(o.custom_id);
    if (!customId) return bad(i + 1, 'missing_required_parameter', "Missing required parameter: 'custom_id'.", 'custom_id');
    if (seen.has(customId)) return bad(i + 1, 'duplicate_custom_id', 'The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch.', 'custom_id');
    seen.add(customId);
    if (o.method !== 'POST') return bad(i + 1, 'invalid_method', "Invalid value for 'method': only 'POST' is supported.", 'method');
    if (o.url !== endpoint) return bad(i + 1, 'invalid_url', `The URL provided for this request does not match the batch endpoint ${endpoint}.`, 'url');
    if (!isObj(o.body)) return bad(i + 1, 'invalid_request', "Invalid 'body': expected an object.", 'body');
    if (o.body.stream === true) return bad(i + 1, 'invalid_request', 'Streaming is not supported in the Batch API.', 'body.stream');
    lines.push({ customId, path: endpoint.slice(3), body: o.body });
  });
  if (lines.length === 0 && invalid.length === 0) invalid.push({ code: 'empty_file', message: 'The batch input file is empty.', param: null, line: null });
  return { lines, invalid };
}

function create(ctx: Ctx, error: ErrorReply): void {
  const b = obj(ctx.body);
  const inputFileId = str(b.input_file_id);
  const endpoint = str(b.endpoint);
  if (!inputFileId) return error(ctx, 400, "Missing required parameter: 'input_file_id'.", 'input_file_id', 'missing_required_parameter');
  if (!endpoint) return error(ctx, 400, "Missing required parameter: 'endpoint'.", 'endpoint', 'missing_required_parameter');
  if (!ENDPOINTS.includes(endpoint)) return error(ctx, 400, `Invalid value: '${endpoint}'. Supported values are: ${ENDPOINTS.map((e) => `'${e}'`).join(', ')}.`, 'endpoint', 'invalid_value');
  if (b.completion_window !== '24h') return error(ctx, 400, `Invalid value: '${String(b.completion_window)}'. Supported values are: '24h'.`, 'completion_window', 'invalid_value');
  const file = ctx.shared.openaiFiles.get(inputFileId);
  if (!file) return error(ctx, 404, `No such File object: ${inputFileId}`, 'input_file_id', null);
  if (file.purpose !== 'batch') return error(ctx, 400, `File ${inputFileId} has purpose '${file.purpose}'; a batch needs 'batch'.`, 'input_file_id', 'invalid_value');
  const knobs: FakeKnobs = { ...ctx.knobs };
  const { lines, invalid } = readLines(file.content, endpoint);
  if (knobs.batchFail && invalid.length === 0) {
    const model = str(obj(lines[0]?.body).model) ?? 'gpt-4o';
    invalid.push({ code: 'token_limit_exceeded', message: `Enqueued token limit reached for ${model} in organization org-fake. Limit: 90,000 enqueued tokens. Please try again once some in_progress batches have been completed.`, param: null, line: null });
  }
  const batch: OpenAIBatch = { id: newId('batch_'), endpoint, inputFileId, metadata: b.metadata ?? null, status: 'validating', lines, invalid, createdAt: Date.now(), knobs, at: {}, busy: Promise.resolve() };
  keep(ctx.shared.openaiBatches, batch.id, batch);
  ctx.shared.batchStats.created++;
  sendJson(ctx, 200, render(batch));
}

/** Moves a batch to where its clock says, running the lines due by now. */
function advance(ctx: Ctx, batch: OpenAIBatch, route: Route, error: ErrorReply): Promise<void> {
  return serially(batch, async () => {
    if (['failed', 'completed', 'expired', 'cancelled'].includes(batch.status)) return;
    const now = Date.now();
    const { phase, due } = batchPhase(batch, batch.lines.length, now);
    const at = (name: keyof OpenAIBatch['at']): number => (batch.at[name] ??= Math.floor(now / 1000));
    if (phase === 'validating') return;
    if (batch.invalid.length > 0) {
      at('failed');
      batch.status = 'failed';
      return;
    }
    if (batch.status === 'validating') {
      at('in_progress');
      batch.status = 'in_progress';
    }
    for (let i = 0; i < due; i++) {
      const line = batch.lines[i];
      if (line.reply) continue;
      line.reply = await runLine(ctx, batch.knobs, line, route, error);
      line.requestId = newId('req_');
    }
    if (batch.cancelledAt !== undefined) {
      if (phase !== 'over') return;
      at('cancelled');
      return finish(ctx, batch, 'cancelled');
    }
    if (phase === 'finalizing' || phase === 'over') {
      at('finalizing');
      batch.status = 'finalizing';
    }
    if (phase !== 'over') return;
    const expired = batch.lines.some((l) => !l.reply);
    at(expired ? 'expired' : 'completed');
    finish(ctx, batch, expired ? 'expired' : 'completed');
  });
}

/** Writes the output and error files (each only when it has a line) and ends the batch. */
function finish(ctx: Ctx, batch: OpenAIBatch, status: 'completed' | 'cancelled' | 'expired'): void {
  const output: string[] = [];
  const errors: string[] = [];
  for (const line of batch.lines) {
    const id = newId('batch_req_');
    if (line.reply) {
      const entry = { id, custom_id: line.customId, response: { status_code: line.reply.status, request_id: line.requestId, body: line.reply.body }, error: null };
      (line.reply.status === 200 ? output : errors).push(JSON.stringify(entry));
    } else if (status === 'expired') {
      errors.push(JSON.stringify({ id, custom_id: line.customId, response: null, error: { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' } }));
    }
    // a cancelled batch's lines that never ran are in neither file
  }
  const file = (kind: string, lines: string[]): string | undefined => {
    if (lines.length === 0) return undefined;
    const f: OpenAIFile = { id: newId('file-'), filename: `${batch.id}_${kind}.jsonl`, purpose: 'batch_output', createdAt: unixNow(), content: `${lines.join('\n')}\n` };
    keep(ctx.shared.openaiFiles, f.id, f);
    return f.id;
  };
  batch.outputFileId = file('output', output);
  batch.errorFileId = file('error', errors);
  batch.status = status;
}

function usageOf(batch: OpenAIBatch): Json {
  let input = 0;
  let output = 0;
  let cached = 0;
  let reasoning = 0;
  for (const line of batch.lines) {
    if (line.reply?.status !== 200) continue;
    const u = obj(obj(line.reply.body).usage);
    input += num(u.prompt_tokens) ?? num(u.input_tokens) ?? 0;
    output += num(u.completion_tokens) ?? num(u.output_tokens) ?? 0;
    cached += num(obj(u.prompt_tokens_details ?? u.input_tokens_details).cached_tokens) ?? 0;
    reasoning += num(obj(u.completion_tokens_details ?? u.output_tokens_details).reasoning_tokens) ?? 0;
  }
  return { input_tokens: input, input_tokens_details: { cached_tokens: cached }, output_tokens: output, output_tokens_details: { reasoning_tokens: reasoning }, total_tokens: input + output };
}

function render(batch: OpenAIBatch): Json {
  const ran = batch.lines.filter((l) => l.reply);
  const ok = ran.filter((l) => l.reply?.status === 200).length;
  const expiredLines = batch.status === 'expired' ? batch.lines.length - ran.length : 0;
  const created = Math.floor(batch.createdAt / 1000);
  const ts = (name: keyof OpenAIBatch['at']): number | null => batch.at[name] ?? null;
  return {
    id: batch.id,
    object: 'batch',
    endpoint: batch.endpoint,
    model: str(obj(batch.lines[0]?.body).model) ?? null,
    errors: batch.status === 'failed' ? { object: 'list', data: batch.invalid } : null,
    input_file_id: batch.inputFileId,
    completion_window: '24h',
    status: batch.status,
    output_file_id: batch.outputFileId ?? null,
    error_file_id: batch.errorFileId ?? null,
    created_at: created,
    in_progress_at: ts('in_progress'),
    expires_at: created + 86_400,
    finalizing_at: ts('finalizing'),
    completed_at: ts('completed'),
    failed_at: ts('failed'),
    expired_at: ts('expired'),
    cancelling_at: ts('cancelling'),
    cancelled_at: ts('cancelled'),
    request_counts: { total: batch.status === 'failed' ? 0 : batch.lines.length, completed: ok, failed: ran.length - ok + expiredLines },
    usage: usageOf(batch),
    metadata: batch.metadata,
  };
}

/** The routes of this file, or false when `ctx.path` is not one of them. */
export async function openaiBatchRoutes(ctx: Ctx, route: Route, error: ErrorReply): Promise<boolean> {
  const { method, path, shared } = ctx;
  const m = /^\/(files|batches)(?:\/([^/]+))?(?:\/(content|cancel))?$/.exec(path);
  if (!m) return false;
  const [, kind, id, action] = m;
  if (kind === 'files') {
    if (method === 'POST' && !id) upload(ctx, error);
    else if (method === 'GET' && id) {
      const f = shared.openaiFiles.get(decodeURIComponent(id));
      if (!f) error(ctx, 404, `No such File object: ${id}`, 'id', null);
      else if (action === 'content') sendRaw(ctx, 200, f.content, undefined, 'application/octet-stream');
      else if (!action) sendJson(ctx, 200, fileObject(f));
      else return false;
    } else return false;
    return true;
  }
  if (method === 'POST' && !id) {
    if (!isObj(ctx.body)) error(ctx, 400, 'We could not parse the JSON body of your request.', null, null);
    else create(ctx, error);
    return true;
  }
  if (method === 'GET' && !id) {
    await Promise.all([...shared.openaiBatches.values()].map((b) => advance(ctx, b, route, error)));
    const all = [...shared.openaiBatches.values()].reverse();
    const after = ctx.query.get('after');
    const from = after ? all.findIndex((b) => b.id === after) + 1 : 0;
    const limit = Math.min(100, Math.max(1, Number(ctx.query.get('limit') ?? 20) || 20));
    const page = all.slice(from, from + limit);
    sendJson(ctx, 200, { object: 'list', data: page.map(render), first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null, has_more: from + limit < all.length });
    return true;
  }
  const batch = id ? shared.openaiBatches.get(decodeURIComponent(id)) : undefined;
  if (!id || (method === 'GET' && action) || (method === 'POST' && action !== 'cancel') || (method !== 'GET' && method !== 'POST')) return false;
  if (!batch) {
    error(ctx, 404, `No batch found with id '${id}'.`, null, null);
    return true;
  }
  await advance(ctx, batch, route, error);
  if (action === 'cancel') {
    if (['failed', 'completed', 'expired'].includes(batch.status)) {
      error(ctx, 409, `Cannot cancel a batch with status '${batch.status}'.`, null, null);
      return true;
    }
    if (batch.cancelledAt === undefined && batch.status !== 'cancelled') {
      shared.batchStats.cancels++;
      batch.cancelledAt = Date.now();
      batch.at.cancelling = unixNow();
      batch.status = 'cancelling';
    }
  }
  sendJson(ctx, 200, render(batch));
  return true;
}
