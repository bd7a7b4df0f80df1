import type { Response } from 'express';
import { AppError, type ErrorMetadata } from '../../shared/errors/app-error';
import type { ErrorCode } from '../../shared/errors/error-codes';
import type { TextStreamEvent } from '../../shared/providers/provider.types';
import type { Db } from '../../shared/db/client';
import type { TextDonePayload } from '../../workers/services/text-executor';
import type { FinalMessage, GenerationGateway, Submission } from './generation-gateway';

export interface StoredError {
  code: ErrorCode;
  status?: number;
  message: string;
  metadata?: ErrorMetadata;
}

export function errorFromStored(e: StoredError): AppError {
  // A provider's Retry-After reaches the caller (all providers rate-limited: workers/services/attempt-order.ts).
  const wait = e.metadata?.retry_after_seconds;
  const headers = typeof wait === 'number' && wait > 0 ? { 'Retry-After': String(wait) } : undefined;
  return new AppError(e.code, e.message, { metadata: e.metadata, headers });
}

/** The stored answer of a completed text generation, for a waiter that missed the worker's message. */
export async function completedText(db: Db, id: string): Promise<TextDonePayload | null> {
  const g = await db.generation.findUnique({ where: { id } });
  // The cost shown is the amount charged (the record's client cost), as in the worker's own message.
  return g?.status === 'completed' ? { ...(g.result as unknown as TextDonePayload), cost: g.clientCost.toFixed(10) } : null;
}

export const timeoutError = () => new AppError('REQUEST_TIMEOUT', 'Timed out waiting for the model: repeat the request', { metadata: {} });

/**
 * Waits for a synchronous text/embeddings generation. Past SYNC_WAIT_MS the job is cancelled and not charged
 * (decisions.md section 5) and the caller gets 408 — unless the worker finished in the meantime.
 */
export async function awaitText<T = TextDonePayload>(gateway: GenerationGateway, sub: Submission, waitMs: number, reread: () => Promise<T | null>): Promise<T> {
  try {
    const m = await gateway.waitFinal(sub, waitMs, async () => {
      const settled = await reread();
      return settled ? { type: 'done', payload: settled, id: sub.id, seq: 0 } : null;
    });
    if (m?.type === 'done') return m.payload as T;
    if (m?.type === 'failed') throw errorFromStored(m.error as StoredError);
    // Cancelled on the submission's own queue (an embeddings job must leave the embeddings queue) and its upstream
    // call aborted, so a provider never works for a caller who has gone.
    if (!m && (await gateway.cancel(sub.id, sub.queue))) throw timeoutError();
    const late = await reread();
    if (late) return late;
    throw timeoutError();
  } finally {
    sub.detach();
  }
}

export interface StreamHandlers {
  delta(ev: TextStreamEvent): string[];
  done(payload: TextDonePayload): string[];
  failed(error: StoredError, payload?: TextDonePayload): string[];
}

/** How long a stopped stream waits for the worker to settle it and report the cost (then it cancels it itself). */
export const STOP_GRACE_MS = 5_000;

/**
 * Ends a stream after SYNC_WAIT_MS of silence. Content already sent: the worker is told to stop (its upstream
 * call is aborted) and to charge what was produced; its final message carries that cost. Nothing sent: the
 * generation is cancelled uncharged. Returns the final message to relay, or null (uncharged timeout).
 */
async function endAfterTimeout(gateway: GenerationGateway, sub: Submission, produced: boolean, onDelta: (ev: TextStreamEvent) => void): Promise<FinalMessage | null> {
  if (produced) {
    await gateway.stop(sub.id, 'timeout');
    // Deltas still in flight are relayed: the client sees all the output it is charged for.
    const deadline = Date.now() + STOP_GRACE_MS;
    for (let m = await sub.mailbox!.next(STOP_GRACE_MS); m; m = await sub.mailbox!.next(Math.max(0, deadline - Date.now()))) {
      if (m.type === 'delta') onDelta(m.event);
      else if (m.type === 'done' || m.type === 'failed' || m.type === 'cancelled') return m;
    }
  }
  if (await gateway.cancel(sub.id, sub.queue)) return null;
  // The worker ended it first: relay its own ending (and cost).
  return gateway.waitFinal(sub, STOP_GRACE_MS);
}

/**
 * Relays a streamed generation as Server-Sent Events, event by event, as the worker publishes them (nothing is
 * buffered). A client that leaves stops the job and its upstream call: after content reached it, the generation
 * is billed for what was produced; before, it is cancelled uncharged (decisions.md section 4).
 */
export async function pumpStream(
  res: Response,
  gateway: GenerationGateway,
  sub: Submission,
  waitMs: number,
  head: string[],
  h: StreamHandlers,
): Promise<void> {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  let gone = false;
  let produced = false;
  let lastSeq = 0;
  // `res` closes when the reply ends or the connection drops (a request's own 'close' fires once its body is read).
  res.on('close', () => {
    if (res.writableEnded) return;
    gone = true;
    sub.mailbox?.close();
  });
  const write = (chunks: string[]) => {
    if (!gone && chunks.length) res.write(chunks.join(''));
  };
  write(head);
  try {
    while (!gone) {
      const m = await sub.mailbox!.next(waitMs);
      if (gone) break;
      if (m && m.seq <= lastSeq && produced) {
        // The numbering started over: the job is being re-run (its worker died) and would send the text again from
        // the start. What the client already has cannot be taken back, so the stream ends here, uncharged.
        await gateway.cancel(sub.id, sub.queue);
        write(h.failed({ code: 'SERVICE_UNAVAILABLE', message: 'The worker running this stream stopped: repeat the request' }));
        break;
      }
      if (m) lastSeq = m.seq;
      if (!m) {
        const final = await endAfterTimeout(gateway, sub, produced, (ev) => write(h.delta(ev)));
        if (final?.type === 'done') write(h.done(final.payload as TextDonePayload));
        else if (final?.type === 'failed') write(h.failed(final.error as StoredError, final.payload as TextDonePayload | undefined));
        else write(h.failed({ code: 'REQUEST_TIMEOUT', message: 'Timed out waiting for the model', metadata: { reason: 'upstream_timeout' } }));
        break;
      }
      if (m.type === 'delta') {
        produced = true;
        write(h.delta(m.event));
      }
      else if (m.type === 'done') {
        write(h.done(m.payload as TextDonePayload));
        break;
      } else if (m.type === 'failed') {
        write(h.failed(m.error as StoredError, m.payload as TextDonePayload | undefined));
        break;
      } else if (m.type === 'cancelled') {
        write(h.failed({ code: 'REQUEST_TIMEOUT', message: 'The generation was cancelled' }));
        break;
      }
    }
  } finally {
    sub.detach();
    if (!gone) res.end();
  }
  if (gone) {
    // The client left before the end: stop the provider. With content sent, the worker charges what was produced.
    if (produced) await gateway.stop(sub.id, 'client_gone');
    else await gateway.cancel(sub.id, sub.queue);
  }
}
