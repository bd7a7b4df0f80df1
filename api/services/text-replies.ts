import type { Response } from 'express';
import { AppError, type StoredError } from '../../shared/errors/app-error';
import type { TextResult, TextStreamEvent } from '../../shared/providers/provider.types';
import type { TextDonePayload } from '../../shared/queue/job-catalog';
import type { GenerationGateway } from './generation-gateway';
import { STOP_GRACE_MS, type FinalMessage, type Submission } from './generation-order';
import type { RoutePlanner } from './route-planner';
import { buildChatCompletion, type ChatCompletion } from '../../shared/formats/chat.mapper';
import { chatUsage } from '../../shared/formats/format-utils';

/**
 * The chat.completion object of a completed text generation, as POST /v1/chat/completions answers it (and a batch's
 * output line holds it). Its warnings are the generation's: the request's, the plan's, the answering endpoint's.
 */
export function chatCompletionOf(id: string, created: number, logprobs: boolean, p: TextDonePayload): ChatCompletion {
  const usage = chatUsage(p.result.usage, { totalRub: p.cost }, p.plugins ? { plugins: p.plugins } : undefined);
  return buildChatCompletion({ id, created, model: p.model, result: p.result, usage, logprobs, warnings: p.warnings.length ? p.warnings : undefined });
}


/**
 * 408 for a synchronous wait that ran out. It says what became of the generation and how to get its result. Without
 * an Idempotency-Key the SDKs are told not to re-send it (`x-should-retry: false`): each blind re-send would be a new
 * generation. With one a repeat joins the running generation, so they may.
 */
export function timeoutError(id: string, waitMs: number, running: boolean): AppError {
  const after = `No answer within ${Math.round(waitMs / 100) / 10} s`;
  const message = running
    ? `${after}: generation ${id} keeps running and is charged once. Repeat the request with the same Idempotency-Key to receive its result (the repeat waits for it, or replays it once finished)${
        id.startsWith('resp_') ? `, or read it at GET /v1/responses/${id}` : ''
      }; GET /v1/history/generations/${id} shows its status`
    : `${after}: generation ${id} was cancelled and is not charged. Repeat the request; with an Idempotency-Key header a repeat would pick up the running generation instead of starting another (docs/idempotency.md)`;
  return new AppError('REQUEST_TIMEOUT', message, { metadata: { generation_id: id, generation_status: running ? 'running' : 'cancelled' }, retry: running });
}

/** What a generation service that waits for its worker's reply is given. */
export interface WaitingServiceDeps {
  planner: RoutePlanner;
  gateway: GenerationGateway;
  /** How long a synchronous request waits for its worker (SYNC_WAIT_MS). */
  syncWaitMs: number;
}

/**
 * Waits for a synchronous text/embeddings generation. Past SYNC_WAIT_MS the job is cancelled and not charged
 * (decisions.md section 5) and the caller gets 408 — unless the worker finished in the meantime, or the request
 * has an Idempotency-Key: then the generation goes on and a repeat of the request gets its result (`outwaited`).
 */
export async function awaitText<T = TextDonePayload>(gateway: GenerationGateway, sub: Submission, waitMs: number, reread: () => Promise<T | null>): Promise<T> {
  const again = async (): Promise<FinalMessage | null> => {
    const settled = await reread();
    return settled ? { type: 'done', payload: settled, id: sub.id, seq: 0 } : null;
  };
  try {
    const m = (await gateway.waitFinal(sub, waitMs, again)) ?? (await outwaited(gateway, sub, { goesOn: sub.keyed === true, reread: again }));
    if (m === 'running') throw timeoutError(sub.id, waitMs, true);
    if (m?.type === 'done') return m.payload as T;
    if (m?.type === 'failed') throw AppError.fromStored(m.error);
    throw timeoutError(sub.id, waitMs, false);
  } finally {
    sub.detach();
  }
}

/**
 * What happens when a client's wait for a generation runs out (SYNC_WAIT_MS): the one rule of timeouts, for every kind.
 * - `goesOn` (an Idempotency-Key, whose repeat gets the result; a media generation, whose record answers 202): it goes
 *   on, `'running'`.
 * - A stream that already sent content (`produced`): its worker is told to stop (its upstream call is aborted) and to
 *   charge what was produced; the deltas still in flight are relayed (`onDelta`) and its final message, carrying that
 *   cost, is returned.
 * - Anything else is cancelled, uncharged (null), unless it ended first: then its own ending (`reread`, else the
 *   mailbox). A cancel that does not commit within STOP_GRACE_MS (PostgreSQL away) is 503.
 */
export async function outwaited(
  gateway: GenerationGateway,
  sub: Submission,
  opts: { goesOn: boolean; produced?: boolean; onDelta?: (ev: TextStreamEvent) => void; reread?: () => Promise<FinalMessage | null> },
): Promise<FinalMessage | 'running' | null> {
  if (opts.goesOn) return 'running';
  if (opts.produced) {
    await gateway.stop(sub.id, 'timeout');
    const final = await gateway.waitFinal(sub, STOP_GRACE_MS, undefined, opts.onDelta);
    if (final) return final;
  }
  // Cancelled on the submission's own queue (an embeddings job must leave the embeddings queue) and its upstream call
  // aborted, so a provider never works for a caller who has gone.
  const cancel = gateway.cancel(sub.id, sub.queue);
  cancel.catch(() => undefined); // a late failure changes nothing more
  const cancelled = await Promise.race([cancel, new Promise<'late'>((r) => setTimeout(() => r('late'), STOP_GRACE_MS).unref())]);
  if (cancelled === 'late') throw new AppError('SERVICE_UNAVAILABLE', `Generation ${sub.id} could not be ended in time: repeat the request`);
  if (cancelled) return null;
  // The worker ended it first: its own ending (and cost), from its record, which the cancel found ended; else its final
  // message (a record that shows no answer: failed, or `store: false`), which may have been lost with a Redis restart.
  // A stream's deltas that came meanwhile go out before it: its cost is for them.
  return (await opts.reread?.().catch(() => null)) ?? (await gateway.waitFinal(sub, STOP_GRACE_MS, opts.reread, opts.onDelta)) ?? null;
}

export interface StreamHandlers {
  /** The model whose endpoint answers, before its first delta (after a fallback, not the one asked for). */
  started?(model: string): void;
  delta(ev: TextStreamEvent): string[];
  done(payload: TextDonePayload): string[];
  failed(error: StoredError, payload?: TextDonePayload): string[];
}

export { STOP_GRACE_MS };

/** A finished result as the stream events that would have produced it (replays of an Idempotency-Key). */
export function replayEvents(result: TextResult): TextStreamEvent[] {
  let tool = 0;
  return result.output.flatMap((o): TextStreamEvent[] => {
    if (o.type === 'reasoning') {
      const deltas: TextStreamEvent[] = o.summary.map((p) => ({ type: 'reasoning_delta', text: p.text }));
      return [...deltas, { type: 'reasoning_end', ...(o.encrypted_content !== undefined && { encryptedContent: o.encrypted_content }) }];
    }
    if (o.type === 'function_call') {
      const index = tool++;
      return [
        { type: 'tool_call_start', index, callId: o.call_id, name: o.name },
        { type: 'tool_call_delta', index, argumentsDelta: o.arguments },
      ];
    }
    return o.content.map((c) => ({ type: 'text_delta', text: c.text }));
  });
}

/**
 * Starts a Server-Sent Events reply: status and headers (no buffering by proxies), sent at once, with `head` (the
 * stream's first events) when there is one: one write, one packet. Returns whether the client has gone; `onGone` runs
 * once when the connection drops before the reply ended.
 */
export function openEventStream(res: Response, opts: { head?: string; onGone?: () => void } = {}): () => boolean {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  if (opts.head) res.write(opts.head);
  else res.flushHeaders();
  let gone = false;
  // `res` closes when the reply ends or the connection drops (a request's own 'close' fires once its body is read).
  res.on('close', () => {
    if (res.writableEnded) return;
    gone = true;
    opts.onGone?.();
  });
  return () => gone;
}
