import { Job, type JobsOptions, type Queue } from 'bullmq';

// BullMQ's own script, as its installed version runs it (a module of its package; no export map restricts it).
const { addStandardJob } = require('bullmq/dist/cjs/scripts/addStandardJob-9') as typeof import('bullmq/dist/esm/scripts/addStandardJob-9');

/**
 * Claim at enqueue (docs/architecture.md): a job whose client waits in this process, for a queue a worker of this
 * process serves with a free slot, is added and made active for that worker in one Redis script, the way BullMQ's
 * own fetch would have made it active, and runs here at once. It is a BullMQ job like any other (in the active list,
 * locked, its lock renewed, re-run by any worker if this process dies, finished by BullMQ), but its pick-up costs
 * nothing: no worker is woken to fetch it, and BullMQ's fetch loop makes none of its follow-up calls (a speculative
 * second fetch, and the wake and fetch that the marker its fetch script re-adds causes).
 *
 * The script is BullMQ's own `addStandardJob` (read from the installed BullMQ, with the arguments BullMQ builds for
 * `queue.add`), run as a function, then the claim. The claim moves the job from `wait` to `active` only when
 * BullMQ's fetch would give it now: the queue is not paused, rate limited or at its global concurrency, no older job
 * waits (a claim never overtakes one), and the job is new. It then does for this one job what BullMQ's fetch script
 * does (`moveToActive` through `prepareJobForProcessing`): the lock with the worker's token, the `active` event,
 * `processedOn` and the started-attempts count. The marker the add left for blocked workers goes when nothing else
 * is left to fetch; blocked clients are served only once a script ends, so no worker wakes. Otherwise the job stays
 * in `wait`, where any worker fetches it as usual.
 */
const CLAIM_JOB = `
local function bullmqAddStandardJob()
${addStandardJob.content}
end
local rcall = redis.call
local args = cmsgpack.unpack(ARGV[1])
local keyPrefix, jobId = args[1], args[2]
if jobId == "" or rcall("EXISTS", keyPrefix .. jobId) == 1 then return {bullmqAddStandardJob(), 0} end
local added = bullmqAddStandardJob()
local waitKey, metaKey, activeKey, eventsKey, markerKey = KEYS[1], KEYS[3], KEYS[7], KEYS[8], KEYS[9]
local meta = rcall("HMGET", metaKey, "paused", "concurrency", "max")
if meta[1] or meta[3] then return {added, 0} end
if meta[2] and rcall("LLEN", activeKey) >= tonumber(meta[2]) then return {added, 0} end
if rcall("LLEN", waitKey) ~= 1 or rcall("LINDEX", waitKey, 0) ~= jobId then return {added, 0} end
rcall("RPOPLPUSH", waitKey, activeKey)
if rcall("ZCARD", keyPrefix .. "prioritized") == 0 then rcall("ZREM", markerKey, "0") end
local jobKey = keyPrefix .. jobId
rcall("SET", jobKey .. ":lock", ARGV[4], "PX", ARGV[5])
rcall("XADD", eventsKey, "*", "event", "active", "jobId", jobId, "prev", "waiting")
rcall("HSET", jobKey, "processedOn", ARGV[6])
rcall("HINCRBY", jobKey, "ats", 1)
return {added, rcall("HGETALL", jobKey)}
`;
const COMMAND = 'switchyardAddClaimed';

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
  /** A ticket when a slot is free, else null. */
  hold(): ClaimTicket | null;
}

/** Claimers by qualified queue name (`<prefix>:<queue>`): module state, process-wide by nature, like localGrants. */
const claimers = new Map<string, Set<Claimer>>();

/** A worker offers its free slots to the jobs this process enqueues for its queue; the returned function withdraws them. */
export function offerClaims(qualifiedName: string, claimer: Claimer): () => void {
  let set = claimers.get(qualifiedName);
  if (!set) claimers.set(qualifiedName, (set = new Set()));
  set.add(claimer);
  return () => {
    set.delete(claimer);
    if (set.size === 0 && claimers.get(qualifiedName) === set) claimers.delete(qualifiedName);
  };
}

function holdSlot(qualifiedName: string): ClaimTicket | null {
  for (const c of claimers.get(qualifiedName) ?? []) {
    const ticket = c.hold();
    if (ticket) return ticket;
  }
  return null;
}

const defined = new WeakSet<object>();

/**
 * The arguments BullMQ gives its `addStandardJob` script for this job (as `queue.add` builds them: Queue.addJob,
 * Job.create, addJobToTransaction), caught on their way out; null when BullMQ would use another script (a delayed,
 * prioritized or child job).
 */
async function addStandardJobArgs(queue: Queue, data: object, opts: JobsOptions & { jobId: string }): Promise<unknown[] | null> {
  const job = new Job(queue, queue.name, data, { ...queue.jobsOpts, ...opts }, opts.jobId);
  let caught: { name: string; args: unknown[] } | undefined;
  const catcher = { runCommand: (name: string, args: unknown[]) => ((caught = { name, args }), '') };
  await queue.backend.addJobToTransaction(catcher as never, job.asJSON(), opts.jobId);
  return caught?.name.startsWith('addStandardJob:') ? caught.args : null;
}

/**
 * Whether a job may be claimed at enqueue, and when a claimed job starts: `true`, inside `addJob` before its caller
 * goes on (the provider is called soonest); `next-turn`, on the event loop's next turn, once the caller has gone on
 * (a stream's head leaves before the job's own work runs).
 */
export type Claim = boolean | 'next-turn';

/**
 * Adds a job (`queue.add`'s options; `jobId` required). With `claim`, a worker of this process with a free slot
 * takes it in the same script (above): 'claimed'. Otherwise, or when BullMQ's fetch would not give it now, it waits
 * in the queue: 'queued'.
 */
export async function addJob(queue: Queue, data: object, opts: JobsOptions & { jobId: string }, claim: Claim): Promise<'claimed' | 'queued'> {
  const ticket = claim ? holdSlot(queue.qualifiedName) : null;
  let started = false;
  try {
    const args = ticket && (await addStandardJobArgs(queue, data, opts));
    if (!ticket || !args) {
      await queue.add(queue.name, data, opts);
      return 'queued';
    }
    const client = (await queue.backend.client) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>> & { defineCommand(name: string, d: { numberOfKeys: number; lua: string }): void };
    if (!defined.has(client)) {
      client.defineCommand(COMMAND, { numberOfKeys: 9, lua: CLAIM_JOB });
      defined.add(client);
    }
    const [added, raw] = (await client[COMMAND]!(...args, ticket.token, ticket.lockDuration, Date.now())) as [unknown, unknown];
    if (typeof added === 'number' && added < 0) throw new Error(`BullMQ refused the job (code ${added})`);
    if (!Array.isArray(raw)) return 'queued';
    started = true;
    ticket.start(raw as string[], opts.jobId, claim === 'next-turn');
    return 'claimed';
  } finally {
    if (!started) ticket?.release();
  }
}
