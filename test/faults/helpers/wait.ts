import type { Queue } from 'bullmq';
import { waitFor as poll } from '../../helpers/until';

/** Polls `fn` every 50 ms until it holds; throws naming `what` after `timeoutMs` (test/helpers/until.ts). */
export function waitFor(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  return poll(what, fn, timeoutMs, 50);
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
