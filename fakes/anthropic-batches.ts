/**
 * Anthropic's Message Batches API, under `/anthropic/v1`: `POST /messages/batches` (`{requests: [{custom_id, params}]}`),
 * `GET /messages/batches`, `GET /messages/batches/{id}`, `POST /messages/batches/{id}/cancel`,
 * `GET /messages/batches/{id}/results` (JSONL). Each request is answered by the format's `POST /messages` handler
 * (anthropic.ts), so a succeeded result's `message` is what the direct call answers.
 * https://docs.anthropic.com/en/api/creating-message-batches
 */
import { isObj, newId, obj, sendJson, sendRaw, str } from './common';
import type { Ctx, Json } from './common';
import type { FakeKnobs } from './fake-knobs';
import { batchPhase, runLine, serially } from './batch-lines';
import type { AnthropicBatch, AnthropicBatchLine as Line } from './fake-state';

type Route = (ctx: Ctx) => Promise<void> | void;
type ErrorReply = (ctx: Ctx, status: number, message?: string) => void;

const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_REQUESTS = 100_000;
const MAX_KEPT = 10_000;
const iso = (ms: number): string => new Date(ms).toISOString();

function create(ctx: Ctx, error: ErrorReply): void {
  const b = obj(ctx.body);
  if (!Array.isArray(b.requests)) return error(ctx, 400, 'requests: Field required');
  if (b.requests.length === 0) return error(ctx, 400, 'requests: List should have at least 1 item after validation, not 0');
  if (b.requests.length > MAX_REQUESTS) return error(ctx, 400, `requests: List should have at most ${MAX_REQUESTS} items after validation, not ${b.requests.length}`);
  const lines: Line[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < b.requests.length; i++) {
    const r = obj(b.requests[i]);
    const customId = str(r.custom_id);
    if (customId === undefined) return error(ctx, 400, `requests.${i}.custom_id: Field required`);
    if (!CUSTOM_ID.test(customId)) return error(ctx, 400, `requests.${i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
    if (seen.has(customId)) return error(ctx, 400, `Duplicate custom_id: ${customId}. Each request in a Message Batch must have a unique custom_id.`);
    seen.add(customId);
    if (!isObj(r.params)) return error(ctx, 400, `requests.${i}.params: Field required`);
    lines.push({ customId, params: r.params });
  }
  // A batch the API refuses as a whole (Anthropic has no `failed` batch state: it refuses at creation).
  if (ctx.knobs.batchFail) return error(ctx, 400, 'Message Batch could not be created: the batch exceeds your organization\u2019s batch queue limit.');
  const knobs: FakeKnobs = { ...ctx.knobs };
  const batch: AnthropicBatch = { id: newId('msgbatch_'), lines, status: 'in_progress', createdAt: Date.now(), knobs, busy: Promise.resolve() };
  ctx.shared.anthropicBatches.set(batch.id, batch);
  if (ctx.shared.anthropicBatches.size > MAX_KEPT) ctx.shared.anthropicBatches.delete(ctx.shared.anthropicBatches.keys().next().value as string);
  ctx.shared.batchStats.created++;
  sendJson(ctx, 200, render(ctx, batch));
}

/** Runs the requests due by now and ends the batch when its clock says. */
function advance(ctx: Ctx, batch: AnthropicBatch, route: Route, error: ErrorReply): Promise<void> {
  return serially(batch, async () => {
    if (batch.status === 'ended') return;
    const { phase, due } = batchPhase(batch, batch.lines.length, Date.now());
    for (let i = 0; i < due; i++) {
      const line = batch.lines[i];
      if (line.reply) continue;
      const params = obj(line.params);
      // A streaming request cannot run in a batch: it errors as the API's validation of `params` would.
      if (params.stream === true) line.reply = await runLine(ctx, batch.knobs, { path: '/messages', body: params }, (c) => error(c, 400, 'stream: Streaming is not supported in the Message Batches API.'), error);
      else line.reply = await runLine(ctx, batch.knobs, { path: '/messages', body: params }, route, error);
    }
    if (phase !== 'over') return;
    batch.status = 'ended';
    batch.endedAt = Date.now();
  });
}

/** A request's result: `succeeded` / `errored` once it ran, else `canceled` (a cancel came first) or `expired`. */
function resultOf(batch: AnthropicBatch, line: Line): Json {
  if (line.reply) return line.reply.status === 200 ? { type: 'succeeded', message: line.reply.body } : { type: 'errored', error: line.reply.body };
  return { type: batch.cancelledAt !== undefined ? 'canceled' : 'expired' };
}

function render(ctx: Ctx, batch: AnthropicBatch): Json {
  const counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
  for (const line of batch.lines) {
    // Counts move out of `processing` only once the whole batch ends.
    if (batch.status !== 'ended') counts.processing++;
    else counts[resultOf(batch, line).type as 'succeeded' | 'errored' | 'canceled' | 'expired']++;
  }
  return {
    id: batch.id,
    type: 'message_batch',
    processing_status: batch.status,
    request_counts: counts,
    ended_at: batch.endedAt === undefined ? null : iso(batch.endedAt),
    created_at: iso(batch.createdAt),
    expires_at: iso(batch.createdAt + 86_400_000),
    archived_at: null,
    cancel_initiated_at: batch.cancelledAt === undefined ? null : iso(batch.cancelledAt),
    results_url: batch.status === 'ended' ? `${ctx.baseUrl}/anthropic/v1/messages/batches/${batch.id}/results` : null,
  };
}

/** The routes of this file, or false when `ctx.path` is not one of them. */
export async function anthropicBatchRoutes(ctx: Ctx, route: Route, error: ErrorReply): Promise<boolean> {
  const { method, path, shared } = ctx;
  const m = /^\/messages\/batches(?:\/([^/]+))?(?:\/(results|cancel))?$/.exec(path);
  if (!m) return false;
  const [, id, action] = m;
  if (!id) {
    if (method === 'POST') {
      if (!isObj(ctx.body)) error(ctx, 400, 'There was an error parsing the body of your request. Please ensure the body is valid JSON.');
      else create(ctx, error);
      return true;
    }
    if (method !== 'GET') return false;
    // Newest first; `after_id` is the page of older batches after it, `before_id` the newer ones before it; `has_more`
    // says whether there are more in that direction (https://docs.anthropic.com/en/api/listing-message-batches).
    await Promise.all([...shared.anthropicBatches.values()].map((b) => advance(ctx, b, route, error)));
    const all = [...shared.anthropicBatches.values()].reverse();
    const limit = Math.min(1000, Math.max(1, Number(ctx.query.get('limit') ?? 20) || 20));
    const after = ctx.query.get('after_id');
    const before = ctx.query.get('before_id');
    const at = (id: string) => all.findIndex((b) => b.id === id);
    const from = before ? Math.max(0, at(before) - limit) : after ? at(after) + 1 : 0;
    const end = before ? Math.max(0, at(before)) : Math.min(all.length, from + limit);
    const page = all.slice(from, end);
    const hasMore = before ? from > 0 : end < all.length;
    sendJson(ctx, 200, { data: page.map((b) => render(ctx, b)), has_more: hasMore, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null });
    return true;
  }
  if ((method === 'GET' && action === 'cancel') || (method === 'POST' && action !== 'cancel') || (method !== 'GET' && method !== 'POST')) return false;
  const batch = shared.anthropicBatches.get(decodeURIComponent(id));
  if (!batch) {
    error(ctx, 404, `Message Batch ${id} not found.`);
    return true;
  }
  await advance(ctx, batch, route, error);
  if (action === 'results') {
    if (batch.status !== 'ended') error(ctx, 400, `Message Batch ${batch.id} has not yet ended. Results are available once processing has ended.`);
    else sendRaw(ctx, 200, batch.lines.map((line) => `${JSON.stringify({ custom_id: line.customId, result: resultOf(batch, line) })}\n`).join(''), undefined, 'application/x-jsonl');
    return true;
  }
  if (action === 'cancel' && batch.status === 'in_progress') {
    shared.batchStats.cancels++;
    batch.cancelledAt = Date.now();
    batch.status = 'canceling';
  }
  sendJson(ctx, 200, render(ctx, batch));
  return true;
}
