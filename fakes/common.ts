/**
 * Shared plumbing for the fake providers: the per-request context, JSON replies (with the
 * `malformed` / `failMidStream` knobs applied), SSE framing and the generic stream driver,
 * plus small helpers for reading untyped request JSON.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakeKnobs } from './fake-knobs';
import type { SharedState } from './fake-state';

export interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  /** Path below the wire format's base, e.g. `/chat/completions`. */
  path: string;
  query: URLSearchParams;
  /** Parsed JSON body, the raw text when it is not JSON, or undefined when empty. */
  body: unknown;
  knobs: FakeKnobs;
  /** Whether the failure knobs (status, malformed, hang, ...) apply to this request (see `failTimes`). */
  failing: boolean;
  /** `http://host:port` of the fake, for URLs it hands out. */
  baseUrl: string;
  /** A timer that `close()` cancels, so pending delays never keep the process alive. */
  sleep(ms: number): Promise<void>;
  /**
   * The hold of `holdReplies` and `holdAfterChunks`: resolves when the knobs are next set (or the fake closes), at once
   * when they have been set since this request began.
   */
  held(): Promise<void>;
  shared: SharedState;
}

/** One wire format, mounted under its own path prefix. */
export interface WireFormat {
  prefixes: string[];
  /** Checks credentials; sends the format's 401/403 and returns false when they are missing. */
  auth(ctx: Ctx): boolean;
  /** Sends an error in the format's own body shape (default message when none is given). */
  error(ctx: Ctx, status: number, message?: string): void;
  handle(ctx: Ctx): Promise<void> | void;
}

// ---------- untyped JSON access ----------

export type Json = Record<string, unknown>;
export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const obj = (v: unknown): Json => (isObj(v) ? v : {});
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
/** A string-or-array `stop` parameter as a list. */
export const strList = (v: unknown): string[] =>
  typeof v === 'string' ? [v] : arr(v).filter((s): s is string => typeof s === 'string' && s.length > 0);

let seq = 0;
/** Short unique ids with a provider-style prefix (`chatcmpl-…`, `msg_…`). */
export function newId(prefix: string): string {
  seq = (seq + 1) % 0x7fffffff;
  return `${prefix}${Date.now().toString(36)}${seq.toString(36).padStart(6, '0')}`;
}
export const unixNow = (): number => Math.floor(Date.now() / 1000);

// ---------- replies ----------

const hungUp = new WeakSet<ServerResponse>();
/** The fake itself drops the connection (failure knobs): not an abort by the client. */
export function hangUp(res: ServerResponse): void {
  hungUp.add(res);
  res.destroy();
}
/** Whether the fake dropped this connection itself. */
export const fakeHungUp = (res: ServerResponse): boolean => hungUp.has(res);

/** Plain JSON reply, never subject to the failure knobs (used for errors). */
export function sendRaw(ctx: Ctx, status: number, body: unknown, headers?: Record<string, string>, type = 'application/json'): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  ctx.res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text), ...headers });
  ctx.res.end(text);
}

/** Success JSON reply: honours `malformed` (truncated JSON) and `failMidStream` (half a body, then a reset). */
export function sendJson(ctx: Ctx, status: number, body: unknown, headers?: Record<string, string>): void {
  const { knobs, failing, res } = ctx;
  if (!failing || (!knobs.malformed && !knobs.failMidStream)) return sendRaw(ctx, status, body, headers);
  const text = JSON.stringify(body);
  const half = text.slice(0, Math.max(1, text.length >> 1));
  if (knobs.malformed) return sendRaw(ctx, status, half, headers);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.write(half);
  void ctx.sleep(10).then(() => hangUp(res));
}

// ---------- streaming ----------

/** One SSE frame: `event: name\ndata: json\n\n` (no event line when name is null). */
export function sse(event: string | null, data: unknown, eol = '\n'): string {
  const json = typeof data === 'string' ? data : JSON.stringify(data);
  return event === null ? `data: ${json}${eol}${eol}` : `event: ${event}${eol}data: ${json}${eol}${eol}`;
}

/** A frame cut in the middle of its JSON, for the `malformed` knob. */
function brokenFrame(frame: string): string {
  const at = frame.lastIndexOf('data: ');
  const end = frame.endsWith('\r\n\r\n') ? '\r\n\r\n' : '\n\n';
  if (at < 0) return frame.slice(0, Math.max(1, frame.length >> 1)); // JSON-array streams
  return `${frame.slice(0, at + 6 + Math.max(1, (frame.length - at - 6 - end.length) >> 1))}${end}`;
}

export interface StreamPlan {
  contentType?: string;
  head: string[];
  /** Number of delta frames in a finite stream (the `endlessStream` knob cycles them forever). */
  count: number;
  delta(i: number, last: boolean): string;
  tail(): string[];
}

const waitDrain = (res: ServerResponse): Promise<void> =>
  new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Writes a stream: head frames, `count` deltas (with `chunkDelayMs` between them), tail frames.
 * `malformed` adds a broken copy of the first delta; `failMidStream` resets the socket halfway.
 */
export async function runStream(ctx: Ctx, plan: StreamPlan): Promise<void> {
  const { res, knobs } = ctx;
  const endless = knobs.endlessStream === true;
  const failMid = ctx.failing && knobs.failMidStream === true;
  const malformed = ctx.failing && knobs.malformed === true;
  const delay = knobs.chunkDelayMs ?? 0;
  const cut = Math.max(1, plan.count >> 1);
  let closed = false;
  const left = new Promise<void>((resolve) => res.once('close', () => ((closed = true), resolve())));
  res.writeHead(200, { 'content-type': plan.contentType ?? 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  for (const frame of plan.head) res.write(frame);
  for (let i = 0; endless || i < plan.count; i++) {
    if (i > 0) {
      if (delay > 0) await ctx.sleep(delay);
      else if (endless) await nextTurn();
      if (i === knobs.holdAfterChunks) await Promise.race([ctx.held(), left]);
    }
    if (closed) return;
    if (failMid && i === cut) return resetSoon(ctx);
    const frame = plan.delta(i, !endless && i === plan.count - 1);
    let ok = res.write(frame);
    if (malformed && i === 0) ok = res.write(brokenFrame(frame));
    if (!ok) await waitDrain(res);
  }
  if (closed) return;
  if (failMid) return resetSoon(ctx);
  for (const frame of plan.tail()) res.write(frame);
  res.end();
}

/** Lets already written bytes reach the client, then destroys the socket. */
async function resetSoon(ctx: Ctx): Promise<void> {
  await ctx.sleep(10);
  hangUp(ctx.res);
}

/** Splits `text` into exactly `n` contiguous pieces (some empty when the text is shorter than n). */
export function splitEven(text: string, n: number): string[] {
  const parts = Math.max(1, Math.floor(n));
  const out: string[] = [];
  for (let i = 0; i < parts; i++) out.push(text.slice(Math.floor((i * text.length) / parts), Math.floor(((i + 1) * text.length) / parts)));
  return out;
}

/** Splits a list into at most `n` contiguous non-empty groups. */
export function groupEven<T>(items: T[], n: number): T[][] {
  const parts = Math.max(1, Math.min(Math.floor(n), items.length));
  const out: T[][] = [];
  for (let i = 0; i < parts; i++) out.push(items.slice(Math.floor((i * items.length) / parts), Math.floor(((i + 1) * items.length) / parts)));
  return out;
}
