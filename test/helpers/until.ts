/**
 * How tests wait: for an event (a record's state, a Redis key, a fake provider's request, a job's state), never for
 * the clock. `waitUntil` and `waitFor` poll a condition and fail when it does not come; `pause` is the one fixed wait,
 * kept for what no event can show (that something does NOT happen within a window, the pace of a load), and every
 * call says why in a comment. test/unit/test-waits.test.ts counts them.
 */

/** Polls `fn` every `everyMs` until it returns something other than undefined, and returns that; throws after `timeoutMs`. */
export async function waitUntil<T>(fn: () => Promise<T | undefined>, timeoutMs = 10_000, everyMs = 25): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Polls `check` every `everyMs` until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000, everyMs = 25): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A fixed wait. Only for a window in which something must NOT happen, or for pacing: say which at the call. */
export function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
