import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';

// KEYS[1] the batch's step key; ARGV[1] the holder's token. Deletes it, or extends it by ARGV[2] ms, only while that
// holder has it.
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/**
 * How long the step lock lasts unless renewed: its step renews it every third of that while it runs, so a process that died
 * mid-step holds its batch this long at most.
 */
export const STEP_LOCK_MS = 5_000;

/**
 * One step of a batch at a time, whichever run takes it (docs/batches.md "How a batch runs"): a driver's job re-run
 * after a stall while its first run still steps (an API process too busy to renew its lock) skips its step instead of
 * ordering the same lines beside the other run. A Redis key per batch (`SET NX PX`), renewed while the step runs and
 * released by its holder only. The row's `version` still guards every commit, should the lock lapse (Redis slower than
 * its renewals) while its step goes on.
 */
export class BatchSteps {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly lockMs = STEP_LOCK_MS,
  ) {
    redis.defineCommand('switchyardStepRelease', { numberOfKeys: 1, lua: RELEASE });
    redis.defineCommand('switchyardStepRenew', { numberOfKeys: 1, lua: RENEW });
  }

  private get scripts(): Record<'switchyardStepRelease' | 'switchyardStepRenew', (...args: Array<string | number>) => Promise<number>> {
    return this.redis as never;
  }

  /** Runs `step` while holding the batch; undefined, without running it, when another run holds it. */
  async exclusive<T>(batchId: string, step: () => Promise<T>): Promise<T | undefined> {
    const key = `${this.prefix}:batch-step:${batchId}`;
    const token = randomBytes(12).toString('base64url');
    if ((await this.redis.set(key, token, 'PX', this.lockMs, 'NX')) !== 'OK') return undefined;
    const renew = setInterval(() => void this.scripts.switchyardStepRenew(key, token, this.lockMs).catch(() => undefined), Math.floor(this.lockMs / 3));
    try {
      return await step();
    } finally {
      clearInterval(renew);
      await this.scripts.switchyardStepRelease(key, token).catch(() => undefined);
    }
  }
}
