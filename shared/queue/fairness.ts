import type { Queue } from 'bullmq';
import type Redis from 'ioredis';

/**
 * Fair queues (decisions.md section 7; docs/architecture.md "Fair queues"): the one place that decides in which order
 * the waiting jobs of a generation queue start. BullMQ's fetch (`moveToActive`) takes the wait list first, then the
 * prioritized set by priority (lowest first; FIFO within one priority), so the order is set at enqueue:
 *
 * - interactive work (sync and stream) of an organization with nothing of its own waiting in that queue: no priority.
 *   It goes to the wait list, ahead of every prioritized job, and may be claimed at enqueue (claims.ts);
 * - any other job gets a priority from its organization's tag, start-time fair queuing with unit weights: tag =
 *   max(the organization's last tag, the floor) + 1, the floor being the tag of the last job that started. The k-th
 *   waiting job of every organization starts before the (k+1)-th of any (round robin), each organization's jobs in
 *   the order they came, and an organization that arrives late starts level with the others' next job;
 * - background work (async media, background responses, batch lines) uses a band above every interactive priority.
 *
 * State per queue and class, in Redis: `<queue>:fair:<class>` {epoch, floor} and `<queue>:fair:<class>:<org>`
 * {epoch, n: its jobs waiting, last: its last tag} (expiring when unused). A job counted at enqueue is uncounted when
 * it first starts (or is removed). Drift (a process dying in between) is made void, not reconciled: when a class of a
 * queue has nothing waiting, the next enqueue starts a new epoch, and every count and tag of the old one reads as 0.
 */
export type WorkClass = 'interactive' | 'background';

/** Whose work a job is, for fairness: given with every enqueue of a generation (claims.ts addJob). */
export interface FairGroup {
  organizationId: string;
  workClass: WorkClass;
}

/** The class of a response mode: the client waits (sync, stream) or not (async, batch). */
export function workClassOf(mode: string): WorkClass {
  return mode === 'sync' || mode === 'stream' ? 'interactive' : 'background';
}

/** BullMQ priorities go up to 2^21; interactive tags use 1..BACKGROUND_BASE-1, background ones the band above. */
export const BACKGROUND_BASE = 1_000_000;
const MAX_PRIORITY = 2 ** 21;
const BANDS: Record<WorkClass, { base: number; span: number; lo: string; hi: string }> = {
  // A prioritized job's score is priority * 2^32 + BullMQ's counter.
  interactive: { base: 0, span: BACKGROUND_BASE - 1, lo: '-inf', hi: `(${BACKGROUND_BASE * 2 ** 32}` },
  background: { base: BACKGROUND_BASE, span: MAX_PRIORITY - BACKGROUND_BASE - 1, lo: `${BACKGROUND_BASE * 2 ** 32}`, hi: '+inf' },
};
/** An organization's fairness state expires this long after its last enqueue. */
const ORG_STATE_TTL_MS = 24 * 3600_000;

/** The class of a job from its priority (background jobs are always prioritized, in their band). */
export function classOfPriority(priority: number | undefined): WorkClass {
  return (priority ?? 0) >= BACKGROUND_BASE ? 'background' : 'interactive';
}

/** The keys of a class's band and of an organization's state in it, by qualified queue name (`<prefix>:<queue>`, a job's `queueQualifiedName`). */
function fairKeys(qualifiedName: string, c: WorkClass, org: string): [band: string, org: string] {
  const band = `${qualifiedName}:fair:${c}`;
  return [band, `${band}:${org}`];
}

/**
 * Lua shared by the enqueue script below and the claim (claims.ts). `fairPlan` reads an organization's state as
 * it is before the job is added; `fairCount` counts the job and answers its priority (0: none).
 */
export const FAIR_LUA = `
local function fairPlan(bandKey, orgKey, prioritizedKey, waitKey, lo, hi, interactive)
  local band = redis.call("HMGET", bandKey, "epoch", "floor")
  local p = { epoch = tonumber(band[1]) or 0, floor = tonumber(band[2]) or 0, n = 0, last = 0 }
  p.empty = redis.call("ZCOUNT", prioritizedKey, lo, hi) == 0 and (interactive ~= "1" or redis.call("LLEN", waitKey) == 0)
  if not p.empty then
    local org = redis.call("HMGET", orgKey, "epoch", "n", "last")
    if tonumber(org[1]) == p.epoch then p.n, p.last = tonumber(org[2]) or 0, tonumber(org[3]) or 0 end
  end
  return p
end
local function fairCount(p, bandKey, orgKey, interactive, base, span, ttl)
  if p.empty then
    p.epoch, p.floor = p.epoch + 1, 0
    redis.call("HSET", bandKey, "epoch", p.epoch, "floor", 0)
  end
  local n, last, priority = p.n + 1, p.last, 0
  if interactive ~= "1" or n > 1 then
    last = math.max(last, p.floor) + 1
    priority = tonumber(base) + math.min(last, tonumber(span))
  end
  redis.call("HSET", orgKey, "epoch", p.epoch, "n", n, "last", last)
  redis.call("PEXPIRE", orgKey, ttl)
  return priority
end
`;

/** The arguments `fairPlan` and `fairCount` take for a group, in order (strings, as Redis gives them to Lua). */
export function fairArgs(queue: Pick<Queue, 'qualifiedName' | 'keys'>, group: FairGroup): string[] {
  const b = BANDS[group.workClass];
  const interactive = group.workClass === 'interactive' ? '1' : '0';
  return [...fairKeys(queue.qualifiedName, group.workClass, group.organizationId), queue.keys.prioritized, queue.keys.wait, b.lo, b.hi, interactive, String(b.base), String(b.span), String(ORG_STATE_TTL_MS)];
}

/** In the claim script: `fairPlan` and `fairCount` over ARGV[first..first+9] (fairArgs). */
export function fairLuaCalls(first: number): { plan: string; count: (p: string) => string } {
  const a = (i: number) => `ARGV[${first + i}]`;
  return {
    plan: `fairPlan(${a(0)}, ${a(1)}, ${a(2)}, ${a(3)}, ${a(4)}, ${a(5)}, ${a(6)})`,
    count: (p) => `fairCount(${p}, ${a(0)}, ${a(1)}, ${a(6)}, ${a(7)}, ${a(8)}, ${a(9)})`,
  };
}

// Its keys (the band's, the organization's, the queue's prioritized set and wait list) are the script's KEYS, so a
// Redis Cluster runs it on their node: they share the queue prefix's hash tag. ARGV: lo, hi, interactive, base, span, ttl.
const ENQUEUE = `${FAIR_LUA}
local p = fairPlan(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3])
return fairCount(p, KEYS[1], KEYS[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])`;

const UNCOUNT = `
local band = redis.call("HMGET", KEYS[1], "epoch", "floor")
local org = redis.call("HMGET", KEYS[2], "epoch", "n")
if org[1] and tonumber(org[1]) == (tonumber(band[1]) or 0) and (tonumber(org[2]) or 0) > 0 then redis.call("HINCRBY", KEYS[2], "n", -1) end
local tag = tonumber(ARGV[1])
if tag > (tonumber(band[2]) or 0) then redis.call("HSET", KEYS[1], "floor", tag) end
return 1`;

type Scripted = Redis & Partial<Record<'switchyardFairEnqueue' | 'switchyardFairUncount', (...a: unknown[]) => Promise<unknown>>>;
/** The client with the two scripts defined on it: `defineCommand` adds them to the client itself, which is the record that it was done. */
function scripted(client: Redis): Scripted {
  const c = client as Scripted;
  if (!c.switchyardFairEnqueue || !c.switchyardFairUncount) {
    client.defineCommand('switchyardFairEnqueue', { numberOfKeys: 4, lua: ENQUEUE });
    client.defineCommand('switchyardFairUncount', { numberOfKeys: 2, lua: UNCOUNT });
  }
  return c;
}

/** Counts a job about to be added to `queue` and answers its priority (0: none, the wait list). One round trip; `client`: the queue's. */
export async function fairPriority(client: Redis, queue: Pick<Queue, 'qualifiedName' | 'keys'>, group: FairGroup): Promise<number> {
  return Number(await scripted(client).switchyardFairEnqueue!(...fairArgs(queue, group)));
}

/**
 * A counted job no longer waits: it started for the first time (its tag, if any, moves the floor up), or it was removed.
 * `redis`: any client of the queue's Redis.
 */
export async function uncount(redis: Redis, qualifiedName: string, organizationId: string, priority: number | undefined, started: boolean): Promise<void> {
  const c = classOfPriority(priority);
  const tag = started && priority ? priority - BANDS[c].base : 0;
  await scripted(redis).switchyardFairUncount!(...fairKeys(qualifiedName, c, organizationId), tag);
}

/** Jobs waiting in a queue per class: the wait list and the interactive band are interactive, the band above background. */
export async function waitingByClass(client: Redis, queue: Pick<Queue, 'keys'>): Promise<Record<WorkClass, number>> {
  const [wait, interactive, background] = await Promise.all([
    client.llen(queue.keys.wait),
    client.zcount(queue.keys.prioritized, BANDS.interactive.lo, BANDS.interactive.hi),
    client.zcount(queue.keys.prioritized, BANDS.background.lo, BANDS.background.hi),
  ]);
  return { interactive: wait + interactive, background };
}
