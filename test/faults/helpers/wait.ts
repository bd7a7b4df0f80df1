/** Polls `fn` every 50 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
