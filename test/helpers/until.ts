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
