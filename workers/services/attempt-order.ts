import type { ResolvedEndpoint } from '../../shared/catalog/catalog-index';
import type { ProviderAdapter } from '../../shared/providers/adapter.types';
import type { PlannedCandidate } from '../../shared/queue/job-catalog';
import type { StopSignal } from '../../shared/stop';

/** The endpoint one attempt calls, handed to the executor's own "call this endpoint" function. */
export interface EndpointCall {
  candidate: PlannedCandidate;
  resolved: ResolvedEndpoint;
  adapter: ProviderAdapter;
  /** Aborts the upstream call (cancel, timeout, client gone: shared/queue/cancel-channel.ts). */
  signal?: StopSignal;
}

/** The operation a job needs from an endpoint's adapter; an endpoint without it is recorded `unavailable`. */
export type Operation = 'text' | 'embeddings' | 'image' | 'video' | 'audio' | 'upscale';

/**
 * The longest a job waits for an endpoint's `Retry-After` when nothing else can answer (a longer wait fails
 * the job at once, with the wait in the error's `Retry-After`).
 */
export const RETRY_AFTER_MAX_WAIT_MS = 5_000;

export type NextAttempt<C> =
  | { candidate: C; waitMs: number }
  /** Asked not to be called for longer than we wait: not called, counted as rate limited. */
  | { candidate: C; skipMs: number };

/**
 * The order a job tries its planned endpoints in, honouring `Retry-After`: an endpoint that asked not to be
 * called yet is tried after every other one; when only such endpoints are left, the job waits for the first of
 * them up to RETRY_AFTER_MAX_WAIT_MS, or skips it. An endpoint that answered 429/503 with a short
 * `Retry-After` and was the last hope is tried once more after that wait.
 */
export class AttemptOrder<C extends { slug: string }> {
  private readonly pending: C[];
  private retried = false;

  constructor(
    candidates: readonly C[],
    /** Epoch ms before which the endpoint may not be called, or 0. */
    private readonly retryAfterUntil: (slug: string) => number,
    private readonly now: () => number = Date.now,
  ) {
    this.pending = [...candidates];
  }

  next(): NextAttempt<C> | undefined {
    if (this.pending.length === 0) return undefined;
    const now = this.now();
    const ready = this.pending.findIndex((c) => this.retryAfterUntil(c.slug) <= now);
    if (ready >= 0) return { candidate: this.pending.splice(ready, 1)[0], waitMs: 0 };
    // Every endpoint left is cooling down: the one free soonest.
    let soonest = 0;
    for (let i = 1; i < this.pending.length; i++) if (this.retryAfterUntil(this.pending[i].slug) < this.retryAfterUntil(this.pending[soonest].slug)) soonest = i;
    const candidate = this.pending.splice(soonest, 1)[0];
    const wait = this.retryAfterUntil(candidate.slug) - now;
    return wait <= RETRY_AFTER_MAX_WAIT_MS ? { candidate, waitMs: wait } : { candidate, skipMs: wait };
  }

  /** After `candidate` failed with a `Retry-After`: when it was the last hope, try it once more (after the wait). */
  failedWithRetryAfter(candidate: C, retryAfterMs: number): void {
    if (this.pending.length === 0 && !this.retried && retryAfterMs <= RETRY_AFTER_MAX_WAIT_MS) {
      this.retried = true;
      this.pending.push(candidate);
    }
  }
}

/** Waits `ms`, or less when `signal` aborts (the caller then sees `signal.aborted`). */
export function waitFor(ms: number, signal?: StopSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** `Retry-After` seconds for an error: the soonest any of these endpoints accepts calls again, or undefined. */
export function retryAfterSeconds(slugs: readonly string[], retryAfterUntil: (slug: string) => number, now = Date.now()): number | undefined {
  const waits = slugs.map((s) => retryAfterUntil(s) - now).filter((ms) => ms > 0);
  return waits.length ? Math.max(1, Math.ceil(Math.min(...waits) / 1000)) : undefined;
}
