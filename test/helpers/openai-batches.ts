/** The Batch API as the official openai SDK drives it in the tests (test/e2e/batches*.sdk.test.ts). */
import type OpenAI from 'openai';
import type { Batch } from 'openai/resources/batches';
import { waitUntil } from './until';

/** One input line of a batch file. */
export type BatchLine = { custom_id: string; method: string; url: string; body: Record<string, unknown> };

export const jsonl = (lines: BatchLine[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n';

export const batchEnded = (b: Batch) => ['completed', 'failed', 'expired', 'cancelled'].includes(b.status);

/** The batch, polled through the SDK until `done` holds (or it throws after `timeoutMs`, naming its state). */
export async function batchUntil(c: OpenAI, id: string, done: (b: Batch) => boolean, timeoutMs = 30_000): Promise<Batch> {
  let last: Batch | undefined;
  return waitUntil(async () => {
    last = await c.batches.retrieve(id);
    return done(last) ? last : undefined;
  }, timeoutMs, 50).catch(() => {
    throw new Error(`batch ${id} still ${last?.status}: ${JSON.stringify(last?.request_counts)}`);
  });
}
