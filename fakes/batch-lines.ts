/**
 * What the fakes' batch APIs (openai-batches.ts, anthropic-batches.ts) share: a line answered by the format's own
 * synchronous handler with its reply captured instead of written to a socket, the per-line failure markers, and the
 * clock every fake batch follows (its `batchMs`): lines run a few at a time while it is in progress, then it ends.
 */
import type { ServerResponse } from 'node:http';
import type { Ctx, WireFormat } from './common';
import type { FakeKnobs } from './fake-knobs';
import type { BatchClock, BatchStats, LineReply } from './fake-state';

export const newBatchStats = (): BatchStats => ({ created: 0, linesRun: 0, cancels: 0, uploads: 0 });

/** How long a fake batch takes to end, unless `batchMs` says otherwise. */
export const DEFAULT_BATCH_MS = 200;

/** A ServerResponse look-alike that keeps what a handler writes. */
function capture(): { res: ServerResponse; reply: Promise<LineReply> } {
  let status = 200;
  let text = '';
  let done!: (reply: LineReply) => void;
  const reply = new Promise<LineReply>((resolve) => (done = resolve));
  const finish = (): void => {
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // kept as text
    }
    done({ status, body });
  };
  const res = {
    headersSent: false,
    destroyed: false,
    writableEnded: false,
    writableFinished: false,
    setHeader: () => res,
    writeHead(code: number) {
      status = code;
      res.headersSent = true;
      return res;
    },
    write(chunk: unknown) {
      text += String(chunk);
      return true;
    },
    end(chunk?: unknown) {
      if (chunk !== undefined) text += String(chunk);
      res.writableEnded = res.writableFinished = true;
      finish();
      return res;
    },
    destroy() {
      res.destroyed = true;
      status = 500;
      finish();
      return res;
    },
    once: () => res,
    on: () => res,
    off: () => res,
  };
  return { res: res as unknown as ServerResponse, reply };
}

/** The status a `batchLineErrors` marker gives this line's body, if any. */
export function markedFailure(knobs: FakeKnobs, body: unknown): number | undefined {
  const markers = Object.entries(knobs.batchLineErrors ?? {});
  if (markers.length === 0) return undefined;
  const text = JSON.stringify(body);
  return markers.find(([marker]) => text.includes(marker))?.[1];
}

/**
 * Answers one line: the format's `error` body when a marker fails it, else the synchronous `route` for its path, run
 * with the batch's knobs (as they were at its creation) and no failure knobs (those apply to the batch API's calls).
 */
export async function runLine(
  parent: Ctx,
  knobs: FakeKnobs,
  line: { path: string; body: unknown },
  route: (ctx: Ctx) => Promise<void> | void,
  error: WireFormat['error'],
): Promise<LineReply> {
  const { res, reply } = capture();
  const ctx: Ctx = { ...parent, res, method: 'POST', path: line.path, query: new URLSearchParams(), body: line.body, knobs, failing: false };
  parent.shared.batchStats.linesRun++;
  const status = markedFailure(knobs, line.body);
  if (status !== undefined) error(ctx, status);
  else await route(ctx);
  return reply;
}

const batchMs = (b: BatchClock): number => Math.max(0, b.knobs.batchMs ?? DEFAULT_BATCH_MS);

/**
 * Where a batch stands at `now`: `validating` for its first tenth, then lines run evenly over the next eight tenths
 * (`due` of `total` by now; at most `batchExpireAfterLines` when set), `finalizing` for the last tenth, then `over`.
 * A cancel stops lines at once and the batch is over a tenth of its time later.
 */
export function batchPhase(b: BatchClock, total: number, now: number): { phase: 'validating' | 'running' | 'finalizing' | 'over'; due: number } {
  const ms = batchMs(b);
  const cap = b.knobs.batchExpireAfterLines ?? total;
  const dueAt = (t: number): number => Math.min(cap, total, ms === 0 ? total : Math.floor((total * (t - b.createdAt - ms * 0.1)) / (ms * 0.8)));
  if (b.cancelledAt !== undefined) {
    const due = Math.max(0, dueAt(b.cancelledAt));
    return { phase: now >= b.cancelledAt + ms * 0.1 ? 'over' : 'running', due };
  }
  const elapsed = now - b.createdAt;
  if (elapsed >= ms) return { phase: 'over', due: Math.min(cap, total) };
  if (elapsed < ms * 0.1) return { phase: 'validating', due: 0 };
  if (elapsed >= ms * 0.9) return { phase: 'finalizing', due: Math.min(cap, total) };
  return { phase: 'running', due: Math.max(0, dueAt(now)) };
}

/** Runs `step` after every earlier step of the same batch (two polls at once never run a line twice). */
export function serially(state: { busy: Promise<void> }, step: () => Promise<void>): Promise<void> {
  const next = state.busy.then(step);
  state.busy = next.catch(() => undefined);
  return next;
}

/** `multipart/form-data` parts of a body read as text (the fakes take text files only). */
export function parseMultipart(text: string, contentType: string | undefined): Array<{ name: string; filename?: string; contentType?: string; data: string }> | null {
  const type = contentType ?? '';
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(type);
  if (!/^multipart\/form-data/i.test(type) || !m) return null;
  const delimiter = `--${m[1] ?? m[2]}`;
  const parts: Array<{ name: string; filename?: string; contentType?: string; data: string }> = [];
  const pieces = text.split(delimiter);
  for (const piece of pieces.slice(1)) {
    if (piece.startsWith('--')) break;
    const body = piece.replace(/^\r\n/, '');
    const split = body.indexOf('\r\n\r\n');
    if (split < 0) return null;
    const head = body.slice(0, split);
    const data = body.slice(split + 4).replace(/\r\n$/, '');
    const disposition = /content-disposition:[^\r\n]*/i.exec(head)?.[0] ?? '';
    const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
    if (name === undefined) return null;
    const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
    const partType = /content-type:\s*([^\r\n]*)/i.exec(head)?.[1];
    parts.push({ name, data, ...(filename !== undefined && { filename }), ...(partType !== undefined && { contentType: partType }) });
  }
  return parts;
}
