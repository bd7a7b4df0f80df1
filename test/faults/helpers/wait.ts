import type { Queue } from 'bullmq';
/** Polls `fn` every 50 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether a queue holds no job waiting or running. */
export async function queueIdle(queue: Queue): Promise<boolean> {
  return Object.values(await queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized')).every((v) => v === 0);
}

/** Waits (up to `timeoutMs`) until a queue holds no job waiting or running; its counts then, failed jobs included. */
export async function queueSettled(queue: Queue, timeoutMs: number): Promise<Record<string, number>> {
  await waitFor('the jobs ended', () => queueIdle(queue), timeoutMs).catch(() => undefined);
  return queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized', 'failed');
}
