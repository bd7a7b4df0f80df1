import type Redis from 'ioredis';
import type { WorkClass } from './fairness';

/**
 * An organization's cap on its jobs running at once (`switchyard org update --max-concurrency N`, decisions.md
 * section 7), across every generation queue, enforced where a job starts (workers/services/fair-start.ts). A job
 * carries its organization's cap (`maxConcurrency`, read with the caller at submission).
 *
 * `<prefix>:fair:running:<org>`: the jobs running, each scored with the time its entry lapses (renewed while it runs,
 * so a job whose process died stops counting within `ttlMs`). `<prefix>:fair:deferred:<org>`: the jobs put back
 * because the cap was reached, interactive ones before background ones (fairness.ts: the class a client waits for
 * comes first inside a cap too), each class oldest first (by when the job was made: jobs a worker fetched together
 * reach their admission in any order). A job that ends hands its slot to the first deferred job and
 * wakes it: the slot is that job's until it starts (or, if it never does, for HANDOVER_MS), so a job that happens to
 * be fetched meanwhile cannot take it. The put-back's own delay is the fallback when that wake is lost.
 */
const ADMIT = `
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[2])
if redis.call("ZSCORE", KEYS[1], ARGV[1]) or redis.call("ZCARD", KEYS[1]) < tonumber(ARGV[4]) then
  redis.call("ZADD", KEYS[1], ARGV[3], ARGV[1])
  redis.call("PEXPIRE", KEYS[1], ARGV[5])
  redis.call("ZREM", KEYS[2], ARGV[1])
  return 1
end
redis.call("ZADD", KEYS[2], "NX", ARGV[6], ARGV[1])
redis.call("PEXPIRE", KEYS[2], ARGV[5])
return 0`;

// ARGV: the member that ended, now, the handed slot's lapse, the cap, how many to wake at most.
const RELEASE = `
redis.call("ZREM", KEYS[1], ARGV[1])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[2])
local free = tonumber(ARGV[4]) - redis.call("ZCARD", KEYS[1])
local n = math.min(free, tonumber(ARGV[5]))
if n <= 0 then return {} end
local popped = redis.call("ZPOPMIN", KEYS[2], n)
local woken = {}
for i = 1, #popped, 2 do
  redis.call("ZADD", KEYS[1], ARGV[3], popped[i])
  woken[#woken + 1] = popped[i]
end
return woken`;

/** Deferred scores: a class's rank times this, plus the time the job was made (ms since the epoch, below 2^44). */
const RANK_SPAN = 2 ** 44;
const RANK: Record<WorkClass, number> = { interactive: 0, background: 1 };

/** How long a slot handed to a woken job stays its own before it starts: a promoted job is fetched within milliseconds. */
const HANDOVER_MS = 5_000;

/**
 * How long a deferred job's put-back lasts when no ending wakes it (a wake lost with its process, or sent to a process
 * without a worker of the job's queue): doubling from 250 ms, at most 10 s, and at most 1 s for interactive work,
 * whose client waits.
 */
export function deferDelayMs(timesStarted: number, workClass: WorkClass = 'background'): number {
  return Math.min(250 * 2 ** Math.max(0, timesStarted - 1), workClass === 'interactive' ? 1_000 : 10_000);
}

/** A running or deferred job: `<queue>\t<job id>`. */
export function capMember(queueName: string, jobId: string): string {
  return `${queueName}\t${jobId}`;
}

/** The running and deferred sets expire a day after their last admission (their entries lapse on their own). */
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
    return [`${this.prefix}:fair:running:${org}`, `${this.prefix}:fair:deferred:${org}`];
  }

  /**
   * True when the job may run now (it then counts as running: a free slot, or the one handed to it when it was woken);
   * false: deferred in its class's place, the organization is at its cap. `madeAt`: when the job was made (its place).
   */
  async admit(org: string, member: string, cap: number, workClass: WorkClass, madeAt: number): Promise<boolean> {
    const now = Date.now();
    return (await this.redis.switchyardCapAdmit!(...this.keys(org), member, now, now + this.ttlMs, cap, KEY_TTL_MS, RANK[workClass] * RANK_SPAN + madeAt)) === 1;
  }

  /** True when the job counts as running: admitted, or handed a slot it has not yet taken. */
  async holds(org: string, member: string): Promise<boolean> {
    const lapses = await this.redis.zscore(this.keys(org)[0], member);
    return lapses !== null && Number(lapses) > Date.now();
  }

  /** Keeps a running job counted (call within ttlMs of the last call). */
  async renew(org: string, member: string): Promise<void> {
    await this.redis.zadd(this.keys(org)[0], 'XX', Date.now() + this.ttlMs, member);
  }

  /**
   * The job ended: it no longer counts. Hands the slots now free (at most `wake`) to the first deferred jobs, interactive
   * ones first, and answers them: the caller wakes them.
   */
  async release(org: string, member: string, cap: number, wake = 1): Promise<string[]> {
    const now = Date.now();
    return (await this.redis.switchyardCapRelease!(...this.keys(org), member, now, now + Math.min(HANDOVER_MS, this.ttlMs), cap, wake)) as string[];
  }
}
