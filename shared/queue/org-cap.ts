import type Redis from 'ioredis';

/**
 * An organization's cap on its jobs running at once (`switchyard org update --max-concurrency N`, decisions.md
 * section 7), across every generation queue, enforced where a job starts (workers/services/fair-start.ts). A job
 * carries its organization's cap (`maxConcurrency`, read with the caller at submission).
 *
 * `<prefix>:fair:running:<org>`: the jobs running, each scored with the time its entry lapses (renewed while it runs,
 * so a job whose process died stops counting within `ttlMs`). `<prefix>:fair:parked:<org>`: the jobs put back
 * because the cap was reached, oldest first; each job that ends wakes the oldest one (the put-back's own delay is the
 * fallback when that wake is lost).
 */
const ADMIT = `
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[2])
if redis.call("ZSCORE", KEYS[1], ARGV[1]) or redis.call("ZCARD", KEYS[1]) < tonumber(ARGV[4]) then
  redis.call("ZADD", KEYS[1], ARGV[3], ARGV[1])
  redis.call("PEXPIRE", KEYS[1], ARGV[5])
  redis.call("ZREM", KEYS[2], ARGV[1])
  return 1
end
redis.call("ZADD", KEYS[2], "NX", ARGV[2], ARGV[1])
redis.call("PEXPIRE", KEYS[2], ARGV[5])
return 0`;

const RELEASE = `
redis.call("ZREM", KEYS[1], ARGV[1])
return redis.call("ZPOPMIN", KEYS[2], ARGV[2])`;

/** How long a parked job's put-back lasts when no ending wakes it: doubling from 250 ms, at most 10 s. */
export function parkDelayMs(timesStarted: number): number {
  return Math.min(250 * 2 ** Math.max(0, timesStarted - 1), 10_000);
}

/** A running or parked job: `<queue>\t<job id>`. */
export function capMember(queueName: string, jobId: string): string {
  return `${queueName}\t${jobId}`;
}

/** The running and parked sets expire a day after their last admission (their entries lapse on their own). */
const KEY_TTL_MS = 24 * 3600_000;

type Scripted = Redis & Record<string, (...a: unknown[]) => Promise<unknown>>;

export class OrgCaps {
  private readonly redis: Scripted;
  constructor(
    redis: Redis,
    private readonly prefix: string,
    /** How long a running entry counts without renewal (the job lock's duration). */
    readonly ttlMs: number,
  ) {
    redis.defineCommand('switchyardCapAdmit', { numberOfKeys: 2, lua: ADMIT });
    redis.defineCommand('switchyardCapRelease', { numberOfKeys: 2, lua: RELEASE });
    this.redis = redis as Scripted;
  }

  private keys(org: string): [string, string] {
    return [`${this.prefix}:fair:running:${org}`, `${this.prefix}:fair:parked:${org}`];
  }

  /** True when the job may run now (it then counts as running); false: parked, the organization is at its cap. */
  async admit(org: string, member: string, cap: number): Promise<boolean> {
    const now = Date.now();
    return (await this.redis.switchyardCapAdmit!(...this.keys(org), member, now, now + this.ttlMs, cap, KEY_TTL_MS)) === 1;
  }

  /** Keeps a running job counted (call within ttlMs of the last call). */
  async renew(org: string, member: string): Promise<void> {
    await this.redis.zadd(this.keys(org)[0], 'XX', Date.now() + this.ttlMs, member);
  }

  /** The job ended: it no longer counts. Answers the parked jobs to wake (at most `wake`), oldest first. */
  async release(org: string, member: string, wake = 1): Promise<string[]> {
    const popped = (await this.redis.switchyardCapRelease!(...this.keys(org), member, wake)) as string[];
    return popped.filter((_, i) => i % 2 === 0);
  }
}
