import type { Generation } from '../../shared/db/generated/client';
import type { AppError, StoredError } from '../../shared/errors/app-error';
import { money } from '../../shared/money';
import { lineGenerationId } from './batch-answers';

/**
 * A line started and not yet answered (the batch row's `in_flight`): its place in the input, its generation's id, and
 * its state between tries.
 */
export interface InFlight {
  line: number;
  offset: number;
  customId: string;
  id: string;
  /** Which try `id` is (absent: the first): a line tried again after a transient failure orders a generation of its own. */
  attempt?: number;
  /** When its first transient failure was seen (ms since the epoch): it is tried again for `lineRetryMs` from then. */
  failedAt?: number;
  /** Not ordered before this (ms since the epoch): its back-off after a transient failure. */
  retryAt?: number;
  /** Refused for money while lines of its batch held reservations: ordered again once some of them have ended. */
  waitsForFunds?: true;
}

/**
 * What one order of a line came to: granted (`id` the generation the line now has: a replay of its key may name an
 * earlier try's), refused for money (402), refused for a while (503: PostgreSQL or Redis away, nothing reserved), or
 * refused for good (the line's error answer).
 */
export type Ordered = { kind: 'granted'; id: string } | { kind: 'funds' | 'transient' | 'refused'; error: AppError };

/** How an order's refusal counts: money, a transient failure of ours, or for good. */
export function refusalOf(e: AppError): Ordered {
  if (e.code === 'INSUFFICIENT_BALANCE') return { kind: 'funds', error: e };
  if (e.code === 'SERVICE_UNAVAILABLE') return { kind: 'transient', error: e };
  return { kind: 'refused', error: e };
}

/**
 * Orders a step's lines, the money rule of docs/batches.md ("A batch never overspends"): the fresh ones at once, each
 * for its whole bound (`whole`); then, in line order, those refused for money and the `waiting` ones. While lines of
 * the batch hold reservations (`holding` running before the step, and those granted now) a line refused for money
 * waits for them, and every later line with it; with none held it is ordered as its call would be (a text line's
 * output lowered to what fits), and a refusal then is its 402. So a batch's own reservations never fail its next line,
 * and a line that cannot be paid with nothing of its batch in flight answers 402 instead of waiting for ever.
 * Each line's outcome; `wait` for a line that waits.
 */
export async function orderInTurn(order: (l: InFlight, whole: boolean) => Promise<Ordered>, fresh: InFlight[], waiting: InFlight[], holding: number): Promise<Map<number, Ordered | 'wait'>> {
  const out = new Map<number, Ordered | 'wait'>();
  await Promise.all(fresh.map(async (l) => out.set(l.line, await order(l, true))));
  let held = holding + [...out.values()].filter((o) => o !== 'wait' && o.kind === 'granted').length;
  const short = [...fresh.filter((l) => (out.get(l.line) as Ordered).kind === 'funds'), ...waiting].sort((x, y) => x.line - y.line);
  let waitRest = false;
  for (const l of short) {
    if (waitRest) {
      out.set(l.line, 'wait');
      continue;
    }
    let o = (out.get(l.line) as Ordered | undefined) ?? (await order(l, true));
    if (o.kind === 'funds') {
      if (held > 0) {
        out.set(l.line, 'wait');
        waitRest = true;
        continue;
      }
      o = await order(l, false);
      if (o.kind === 'funds') o = { kind: 'refused', error: o.error };
    }
    out.set(l.line, o);
    if (o.kind === 'granted') held++;
  }
  return out;
}

/** The first back-off after a transient failure, and the longest. */
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/**
 * A line after a transient failure: tried again after a back-off as long as the failure has lasted so far (1 s,
 * then doubling, at most 30 s), on a new try's generation id when its current one has no generation (`next`). Null
 * once `windowMs` has passed since its first failure: then the failure is its answer.
 */
export function retryOf(l: InFlight, now: number, windowMs: number, next?: { batchId: string; prefix: string }): InFlight | null {
  const failedAt = l.failedAt ?? now;
  if (now - failedAt >= windowMs) return null;
  const retryAt = Math.min(failedAt + windowMs, now + Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, now - failedAt)));
  const { waitsForFunds: _, ...rest } = l;
  return next ? { ...nextTry(rest, next.batchId, next.prefix), failedAt, retryAt } : { ...rest, failedAt, retryAt };
}

/** A line whose order was granted: it runs on generation `id` (its own, or an earlier try's its key replayed). */
export function grantedAs(l: InFlight, id: string): InFlight {
  if (l.id === id && l.retryAt === undefined && !l.waitsForFunds) return l;
  const { retryAt: _, waitsForFunds: __, ...rest } = l;
  return { ...rest, id };
}

/** The line's next try: a generation id of its own (its Idempotency-Key stays the line's: a failed try charged nothing). */
export function nextTry(l: InFlight, batchId: string, prefix: string): InFlight {
  const attempt = (l.attempt ?? 1) + 1;
  const { retryAt: _, waitsForFunds: __, ...rest } = l;
  return { ...rest, id: lineGenerationId(batchId, prefix, l.line, attempt), attempt };
}

/**
 * Whether an ended generation failed for a transient reason of ours, charged nothing: a 503 (PostgreSQL or Redis away;
 * the reaper's "interrupted" of a job lost with Redis), never a provider's refusal.
 */
export function failedTransiently(g: Pick<Generation, 'status' | 'error' | 'clientCost'>): boolean {
  return g.status === 'failed' && (g.error as unknown as StoredError | null)?.code === 'SERVICE_UNAVAILABLE' && money(g.clientCost).isZero();
}
