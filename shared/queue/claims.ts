import { Job, raw2NextJobData, type JobJson, type JobsOptions, type Queue } from 'bullmq';
import { fairArgs, fairPriority, workClassOf, type FairGroup, FAIR_LUA, fairLuaCalls } from './fairness';
import { AT_ONCE_QUEUES } from './job-catalog';
import type { QueueName } from './queue-names';
import type Redis from 'ioredis';

/**
 * Claim at enqueue (docs/architecture.md): a job whose client waits in this process, for a queue a worker of this
 * process serves with a free slot, is added and made active for that worker in one Redis script (the BullMQ
 * part below), the way BullMQ's own fetch would have made it active, and runs here at once. It is a BullMQ job
 * like any other (in the active list, locked, its lock renewed, re-run by any worker if this process dies, finished by
 * BullMQ), but its pick-up costs nothing: no worker is woken to fetch it, and BullMQ's fetch loop makes none of its
 * follow-up calls (a speculative second fetch, and the wake and fetch that the marker its fetch script re-adds causes).
 */

/** One free slot of a worker of this process, held for one job until it starts there or goes to the queue. */
export interface ClaimTicket {
  /** The lock token the job gets, as if this worker had fetched it. */
  token: string;
  lockDuration: number;
  /**
   * The job is active with this ticket's token: run it (`raw` is its hash, as BullMQ's fetch returns it), at once or,
   * `nextTurn`, on the event loop's next turn.
   */
  start(raw: string[], jobId: string, nextTurn?: boolean): void;
  /** Not claimed: the slot is free again. */
  release(): void;
}

/** A worker of this process that takes jobs as they are enqueued. */
export interface Claimer {
  /** A ticket when a slot is free, else null; `organizationId`: whose job it is for (the default share counts it). */
  hold(organizationId?: string): ClaimTicket | null;
  /**
   * A ticket for one of the default share's headroom slots (workers/services/default-share.ts), asked when no slot is
   * free: only for an organization holding fewer than its share, and while the headroom has room; else null.
   */
  holdBeyond?(organizationId: string): ClaimTicket | null;
}

/**
 * The lock tokens a worker gives the jobs it starts on its tickets, as `<prefix><n>`: `claim`, a claimed job's (a fetched
 * job's token is the worker's own); `take`, a job's taken from the wait list into a headroom slot (it waited, so it was
 * counted: not a claim's). Made once per worker, which knows a job started on its tickets by them.
 */
export function ticketTokenPrefixes(workerId: string): { claim: string; take: string } {
  return { claim: `${workerId}:claim:`, take: `${workerId}:take:` };
}

/**
 * Which run of its job this is: the one rule of "first, claimed run?". `first`: nothing ran the job before (not a
 * re-run after a stall, a retry, a media step or a put-back); `claimed`: a claim at enqueue started it (its lock token).
 */
export function runOf(job: Pick<Job, 'attemptsStarted' | 'stalledCounter'>, token?: string): { first: boolean; claimed: boolean } {
  return { first: job.attemptsStarted <= 1 && !job.stalledCounter, claimed: token?.includes(':claim:') === true };
}

/**
 * The workers of one process that take jobs as they are enqueued, by qualified queue name (`<prefix>:<queue>`): part
 * of the process's lane (shared/runtime/local-lane.ts), so two processes, or two test stacks, never claim each other's.
 */
export class LocalClaimers {
  private readonly byQueue = new Map<string, Set<Claimer>>();

  /** A worker offers its free slots to the jobs this process enqueues for its queue; the returned function withdraws them. */
  offer(qualifiedName: string, claimer: Claimer): () => void {
    let set = this.byQueue.get(qualifiedName);
    if (!set) this.byQueue.set(qualifiedName, (set = new Set()));
    set.add(claimer);
    return () => {
      set.delete(claimer);
      if (set.size === 0 && this.byQueue.get(qualifiedName) === set) this.byQueue.delete(qualifiedName);
    };
  }

  /**
   * A free slot of a worker of this process for the queue, held until the job starts there or is released; with the
   * job's organization, when every slot is taken, a headroom slot if that organization is under its share; null when none.
   */
  hold(qualifiedName: string, organizationId?: string): ClaimTicket | null {
    const claimers = this.byQueue.get(qualifiedName) ?? [];
    for (const c of claimers) {
      const ticket = c.hold(organizationId);
      if (ticket) return ticket;
    }
    if (organizationId === undefined) return null;
    for (const c of claimers) {
      const ticket = c.holdBeyond?.(organizationId);
      if (ticket) return ticket;
    }
    return null;
  }
}

/**
 * May a generation's job be claimed at enqueue? The one rule of the job's side, asked by the gateway only: a client
 * waits for it (interactive work: fairness.ts workClassOf; background work waits in its organization's fair order),
 * its organization has no concurrency cap (a capped job may be put back: org-cap.ts), and its queue's jobs start at once
 * (AT_ONCE_QUEUES). The worker's side (a free slot, running, not rate-limited) is its `hold`, the queue's (BullMQ would
 * give the job now, nothing of its organization waits) the claim script's: each asked where its state is.
 */
export function mayClaim(queue: QueueName, mode: string, capped: boolean): boolean {
  return workClassOf(mode) === 'interactive' && !capped && AT_ONCE_QUEUES.has(queue);
}

/** How a job is claimed at enqueue. */
export interface Claim {
  /** The slot it takes. */
  ticket: ClaimTicket;
  /** Start it on the event loop's next turn, once the caller has gone on (a stream's head leaves before the job's work runs); else inside `addJob` (the provider is called soonest). */
  nextTurn?: boolean;
  /** Add the job only if it is claimed: when BullMQ's fetch would not give it now, nothing is added (`not-added`). */
  only?: boolean;
}

/**
 * Adds a job (`queue.add`'s options; `jobId` required). With a claim, the worker holding the ticket takes it in the
 * same script (`addClaimed` below): 'claimed'. Otherwise, or when BullMQ's fetch would not give it now, it
 * waits in the queue: 'queued'; with `only`, it is then not added at all: 'not-added'. The ticket is released unless
 * the job started on it. With `fair` (every generation), the job takes its place in its organization's fair order
 * (fairness.ts): only interactive work of an organization with nothing of its own waiting is claimed, decided in the
 * same script; any other job is added with the priority that order gives it.
 */
export async function addJob(queue: Queue, data: object, opts: JobsOptions & { jobId: string }, claim?: Claim, fair?: FairGroup): Promise<'claimed' | 'queued' | 'not-added'> {
  const ticket = claim?.ticket;
  let started = false;
  try {
    if (ticket) {
      const raw = await addClaimed(queue, data, opts, ticket, claim!.only === true, fair && fairArgs(queue, fair));
      if (raw === 'not-added') return raw;
      if (raw === null) return 'queued';
      if (Array.isArray(raw)) {
        started = true;
        ticket.start(raw, opts.jobId, claim!.nextTurn === true);
        return 'claimed';
      }
    }
    // Not claimed: no slot was free, its organization has work of its own waiting (`backlogged`), or BullMQ would add it
    // with another script (`not-standard`).
    if (claim?.only) return 'not-added';
    const priority = fair ? await fairPriority(await queueClient(queue), queue, fair) : 0;
    await queue.add(queue.name, data, priority ? { ...opts, priority } : opts);
    return 'queued';
  } finally {
    if (!started) ticket?.release();
  }
}

/**
 * The one place that reaches into BullMQ below its public API (from here to the end of the file): claim at enqueue
 * adds a job and makes it active in one Redis script, which must store the job exactly as `queue.add` does and do for it what
 * BullMQ's fetch (`moveToActive`) does. It was written against the BullMQ version below, pinned exactly in
 * package.json; test/unit/bullmq-claim.test.ts fails when the installed BullMQ or the scripts the claim copies
 * (`addStandardJob`, run as is; `moveToActive` with `prepareJobForProcessing`, whose steps the claim repeats) differ,
 * so an upgrade re-reads them before it lands.
 */
export const WRITTEN_FOR = {
  version: '6.7.0',
  /** SHA-256 of each script's `content` as the installed BullMQ ships it. */
  scripts: {
    'addStandardJob-9': '2eee45c9ffc54d24681b737f926016a7f7464f0d32a5f87f623bffa2fc55413c',
    'moveToActive-11': '7d35069db0b831af1bd1b2d5eb8d524e86fc7d3280b8c684a96b6614bad7d79a',
  },
} as const;

type ScriptModule = Record<string, { name: string; keys: number; content: string }>;

/** A script of the installed BullMQ (a module of its package; no export map restricts it). */
export function bullmqScript(file: keyof typeof WRITTEN_FOR.scripts): { name: string; keys: number; content: string } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return Object.values(require(`bullmq/dist/cjs/scripts/${file}`) as ScriptModule)[0]!;
}

/**
 * BullMQ's own `addStandardJob`, run as a function, then the claim. The claim moves the job from `wait` to `active`
 * only when BullMQ's fetch would give it now: the queue is not paused, rate limited or at its global concurrency, no
 * older job waits (a claim never overtakes one), and the job is new; otherwise the job is added to `wait` as `queue.add`
 * adds it, or, asked for the claim only (`only`), not added at all. A claim does for this one job what
 * `moveToActive` does through `prepareJobForProcessing`: the lock with the worker's token, the `active` event,
 * `processedOn` and the started-attempts count; and it marks the hash `syc` (claimed), which BullMQ ignores. The
 * marker the add left for blocked workers goes when nothing else is left to fetch; blocked clients are served only
 * once a script ends, so no worker wakes. Otherwise the job stays in `wait`, where any worker fetches it as usual.
 * With a fair group (fairness.ts), an organization that has jobs of its own waiting gets nothing added (`backlogged`:
 * the caller adds the job with its priority), and a job left in `wait` is counted as that organization's, in the same
 * script.
 */
const FAIR = fairLuaCalls(8);
/** The field a claim sets in the job's hash, so that a later run knows the job was claimed at enqueue (`claimedAtEnqueue`). */
const CLAIMED_FIELD = 'syc';
/**
 * What the claim and the take (below) share of BullMQ's fetch, after `local rcall = redis.call`: whether the queue gives
 * a job now (not paused, rate limited or at its global concurrency), and making a job active for a worker's token
 * (`prepareJobForProcessing`'s steps: the lock, the `active` event, `processedOn`, the started-attempts count), which
 * returns the job's hash as the fetch does.
 */
const START_LUA = `
local function queueGives(metaKey, activeKey)
  local meta = rcall("HMGET", metaKey, "paused", "concurrency", "max")
  return not meta[1] and not meta[3] and not (meta[2] and rcall("LLEN", activeKey) >= tonumber(meta[2]))
end
local function startJob(jobKey, jobId, eventsKey, token, lockMs, now)
  rcall("SET", jobKey .. ":lock", token, "PX", lockMs)
  rcall("XADD", eventsKey, "*", "event", "active", "jobId", jobId, "prev", "waiting")
  rcall("HSET", jobKey, "processedOn", now)
  rcall("HINCRBY", jobKey, "ats", 1)
  return rcall("HGETALL", jobKey)
end
`;
const CLAIM_JOB = `
local function bullmqAddStandardJob()
${bullmqScript('addStandardJob-9').content}
end
${FAIR_LUA}
local rcall = redis.call
${START_LUA}
local args = cmsgpack.unpack(ARGV[1])
local keyPrefix, jobId = args[1], args[2]
if jobId == "" or rcall("EXISTS", keyPrefix .. jobId) == 1 then
  if ARGV[7] == "1" then return {0, -1} end
  return {bullmqAddStandardJob(), 0}
end
local fair = ARGV[8] and ${FAIR.plan}
if fair and fair.n > 0 then return {0, 0, 1} end
local waitKey, metaKey, activeKey, eventsKey, markerKey = KEYS[1], KEYS[3], KEYS[7], KEYS[8], KEYS[9]
local only = ARGV[7] == "1"
local claimable = queueGives(metaKey, activeKey) and rcall("LLEN", waitKey) == 0
if not claimable and only then return {0, -1} end
local added = bullmqAddStandardJob()
local function waits()
  if fair then ${FAIR.count('fair')} end
  return {added, 0}
end
if not claimable then return waits() end
if rcall("LLEN", waitKey) ~= 1 or rcall("LINDEX", waitKey, 0) ~= jobId then return waits() end
rcall("RPOPLPUSH", waitKey, activeKey)
if rcall("ZCARD", keyPrefix .. "prioritized") == 0 then rcall("ZREM", markerKey, "0") end
local jobKey = keyPrefix .. jobId
rcall("HSET", jobKey, "${CLAIMED_FIELD}", "1")
return {added, startJob(jobKey, jobId, eventsKey, ARGV[4], ARGV[5], ARGV[6])}
`;
const COMMAND = 'switchyardAddClaimed';

/**
 * Adds the job and claims it for the ticket's token: the job's hash as BullMQ's fetch returns it when it is now active
 * under that token; null when it stays in `wait`; `not-added` when `only` and it could not be claimed; `backlogged` when
 * nothing was added because the organization of `fair` (fairness.ts fairArgs) has jobs waiting; `not-standard` when
 * nothing was added because BullMQ would use another script than `addStandardJob` (a delayed, prioritized or child job).
 * The script's arguments are the ones BullMQ gives its `addStandardJob` for this job (as `queue.add` builds them:
 * Queue.addJob, Job.create, addJobToTransaction), caught on their way out.
 */
export async function addClaimed(queue: Queue, data: object, opts: JobsOptions & { jobId: string }, ticket: Pick<ClaimTicket, 'token' | 'lockDuration'>, only: boolean, fair?: string[]): Promise<string[] | null | 'not-added' | 'backlogged' | 'not-standard'> {
  const job = new Job(queue, queue.name, data, { ...queue.jobsOpts, ...opts }, opts.jobId);
  let caught: { name: string; args: unknown[] } | undefined;
  const catcher = { runCommand: (name: string, args: unknown[]) => ((caught = { name, args }), '') };
  await queue.backend.addJobToTransaction(catcher as never, job.asJSON(), opts.jobId);
  if (!caught?.name.startsWith('addStandardJob:')) return 'not-standard';
  const client = (await queue.backend.client) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>> & { defineCommand(name: string, d: { numberOfKeys: number; lua: string }): void };
  // Defined once per connection (ioredis adds the command as a method of the client), as generation-bus.ts does.
  if (!(COMMAND in client)) client.defineCommand(COMMAND, { numberOfKeys: 9, lua: CLAIM_JOB });
  const [added, raw, backlogged] = (await client[COMMAND]!(...caught.args, ticket.token, ticket.lockDuration, Date.now(), only ? '1' : '0', ...(fair ?? []))) as [unknown, unknown, unknown];
  if (raw === -1) return 'not-added';
  if (backlogged === 1) return 'backlogged';
  if (typeof added === 'number' && added < 0) throw new Error(`BullMQ refused the job (code ${added})`);
  return Array.isArray(raw) ? (raw as string[]) : null;
}

/** The Redis client a queue runs its commands on (BullMQ 6 keeps it behind its backend). */
export async function queueClient(queue: Queue): Promise<Redis> {
  return (await queue.backend.client) as unknown as Redis;
}

/** A claimed job's hash decoded as BullMQ decodes what its fetch returns (numbers, options, short field names). */
export function claimedJobJson(raw: string[]): JobJson {
  return raw2NextJobData([raw])[0] as JobJson;
}

/**
 * Takes one job that waits in the wait list (not only its head) and makes it active for `token`, as BullMQ's fetch
 * would have made it active had it been next: for the default share's headroom (workers/services/default-share.ts),
 * which starts a waiting interactive job of an organization under its share while every slot is held. The claim's
 * check and steps (START_LUA); the marker goes when nothing is left to fetch.
 */
const TAKE_JOB = `
local rcall = redis.call
${START_LUA}
local waitKey, activeKey, metaKey, eventsKey, markerKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local jobId = ARGV[2]
if not rcall("LPOS", waitKey, jobId) then return 0 end
if not queueGives(metaKey, activeKey) then return 0 end
rcall("LREM", waitKey, 1, jobId)
rcall("LPUSH", activeKey, jobId)
if rcall("LLEN", waitKey) == 0 and rcall("ZCARD", prioritizedKey) == 0 then rcall("ZREM", markerKey, "0") end
return startJob(ARGV[1] .. jobId, jobId, eventsKey, ARGV[3], ARGV[4], ARGV[5])
`;
const TAKE_COMMAND = 'switchyardTakeWaiting';

/** A queue or a Worker: its keys, in BullMQ's naming. */
type QueueKeys = { keys: Record<string, string>; toKey(type: string): string };

/** Takes the waiting job `jobId` for `token` (TAKE_JOB): its hash as BullMQ's fetch returns it, or null when it no longer waits or the queue gives nothing now. */
export async function takeWaiting(client: Redis, queue: QueueKeys, jobId: string, token: string, lockDuration: number): Promise<string[] | null> {
  const c = client as Redis & Record<string, (...a: unknown[]) => Promise<unknown>>;
  if (!(TAKE_COMMAND in c)) client.defineCommand(TAKE_COMMAND, { numberOfKeys: 6, lua: TAKE_JOB });
  const k = queue.keys;
  const raw = await c[TAKE_COMMAND]!(k.wait, k.active, k.meta, k.events, k.marker, k.prioritized, queue.toKey(''), jobId, token, lockDuration, Date.now());
  return Array.isArray(raw) ? (raw as string[]) : null;
}

/** The organization of a waiting generation job (its payload's `organizationId`), or null when it is gone. */
export async function waitingJobOrganization(client: Redis, queue: QueueKeys, jobId: string): Promise<string | null> {
  const data = await client.hget(queue.toKey(jobId), 'data');
  if (!data) return null;
  const org = (JSON.parse(data) as { organizationId?: unknown }).organizationId;
  return typeof org === 'string' ? org : null;
}

/**
 * Whether `job` was claimed at enqueue (the claim's mark in its hash): asked by a later run of it, which BullMQ fetched
 * once the claim run's lock lapsed.
 */
export async function claimedAtEnqueue(client: Redis, job: Pick<Job, 'queueQualifiedName' | 'id'>): Promise<boolean> {
  return (await client.hget(`${job.queueQualifiedName}:${job.id}`, CLAIMED_FIELD)) === '1';
}
