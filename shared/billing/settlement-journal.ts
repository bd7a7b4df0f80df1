import type Redis from 'ioredis';
import { closeRowOf, type Finish, type CloseRow, type DrawnRow, type Ledger } from './ledger';
import { GenerationPublisher, type GenerationEvent, type LocalBuses } from '../queue/generation-bus';
import { scanKeys } from '../queue/redis';
import type { Logger } from '../logger';
import type { JobLock } from '../queue/job-lock';

/**
 * A settlement whose reply went out before its commit (docs/architecture.md "Endings and rules"): the ledger close
 * to apply, and the reply to send again if the process that promised it died before sending it.
 */
export interface PromisedSettlement {
  row: CloseRow;
  /** The API process's reply channel (the job's `replyTo`) and the final message it was sent. */
  replyTo: string | null;
  message: GenerationEvent;
  /**
   * The generation's record, when it was granted from a lease and its record had not committed yet (docs/architecture.md
   * "Leases"): whoever keeps the promise records it first (idempotent: a record already there is left as it is).
   */
  open?: DrawnRow;
  /** When it was made (ms since the epoch): the reaper keeps a promise of a generation never recorded once it is old. */
  at?: number;
}

/** What a promise keeper writes to: the record of a drawn generation, then its close (shared/billing/ledger.ts). */
export type PromiseKeeper = Pick<Ledger, 'openDrawn' | 'close'>;

/** A stream's checkpoint lapses a day after it was written (whoever keeps it comes within minutes: the reaper's age). */
const CHECKPOINT_TTL_MS = 24 * 3600_000;

/** A stored promise's `row.result` when it is the reply's payload (written once, in the message). */
const RESULT_IS_PAYLOAD = '$message.payload';

/**
 * A cancel's fence on a generation in the journal (`fenceForCancel`): the entry's value while a cancel decides. A fence
 * older than CANCEL_FENCE_MS (its cancel died) no longer refuses a promise.
 */
const CANCEL_MARK = '{"cancel":';
export const CANCEL_FENCE_MS = 30_000;

/** A promise refused because a cancel holds the generation (`fenceForCancel`): the worker settles before replying. */
export class PromiseRefused extends Error {
  constructor(generationId: string) {
    super(`a cancel holds generation ${generationId}: its settlement commits before the reply`);
  }
}

// KEYS[1] the organization's journal; ARGV: generation id, value, now (ms), fence lifetime (ms). A promise is written
// unless a live cancel fence is there (0); a fence is written unless a promise is there (0). One script: Redis runs it
// whole, so a promise and a cancel's fence never both succeed.
const PROMISE_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur and string.sub(cur, 1, ${CANCEL_MARK.length}) == '${CANCEL_MARK}' then
  local at = tonumber(string.match(cur, '^{"cancel":(%d+)'))
  if at and at + tonumber(ARGV[4]) > tonumber(ARGV[3]) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`;
const FENCE_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur and string.sub(cur, 1, ${CANCEL_MARK.length}) ~= '${CANCEL_MARK}' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`;
const RELEASE_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur and string.sub(cur, 1, ${CANCEL_MARK.length}) == '${CANCEL_MARK}' then redis.call('HDEL', KEYS[1], ARGV[1]) end
return 1`;

const isFence = (value: string | null | undefined) => value?.startsWith(CANCEL_MARK) === true;

/** The journal's scripts as ioredis defines them on its connection. */
type JournalScripts = Record<'switchyardPromise' | 'switchyardCancelFence' | 'switchyardCancelRelease', (...args: Array<string | number>) => Promise<number>>;

/** How long a read waits for an organization's promised settlements before it answers anyway. */
export const SETTLE_WAIT_MS = 5_000;
const POLL_MS = 2;
/** A wait not over by then asks PostgreSQL (`stillRunning`) whether it is there at all: while it is away nothing commits. */
const PROBE_AFTER_MS = 50;

/**
 * Settlements promised but not yet committed, per organization, in Redis (the queues' store: what holds the job
 * holds its promise). A worker writes the entry before the reply that shows the cost and erases it once the ledger
 * committed the close; a re-run of the job (stalled) or the reaper commits an entry the worker could not.
 *
 * Readers keep read-your-writes through it: a balance, history or stored-response read first waits until the
 * settlements its organization was promised when it arrived are committed (`waitSettled`), and a reservation refused
 * for money retries once they are.
 */
export class SettlementJournal {
  /** The journal's scripts, as ioredis defines them on `redis`. */
  private readonly scripts: JournalScripts;
  /** The key of an organization's journal is this and its id (a hash of its promises, by generation). */
  private readonly journals: string;
  /** The key of a stream's checkpoint is this and its generation's id. */
  private readonly checkpoints: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    /**
     * Which of these generations still run (the API passes a database lookup). A promise whose generation has ended
     * is spent (its close committed, or another ending won): one left behind by a Redis error after the commit is
     * erased when a wait for it runs out, so it delays no later read.
     */
    private readonly stillRunning?: (generationIds: string[]) => Promise<Set<string>>,
    /**
     * The connection `erase` goes over: the workers' job connection (workers/main.ts), so that the erase and the
     * job's completion that follows it leave in one socket write and Redis applies them in that order.
     */
    private readonly eraseVia: Redis = redis,
    /** The process's reply channels (shared/runtime/local-lane.ts): a reply sent again to a waiter here goes to it directly. */
    private readonly buses?: LocalBuses,
  ) {
    // EVALSHA once loaded, as the project's other scripts (a promise is on every reply's path).
    redis.defineCommand('switchyardPromise', { numberOfKeys: 1, lua: PROMISE_SCRIPT });
    redis.defineCommand('switchyardCancelFence', { numberOfKeys: 1, lua: FENCE_SCRIPT });
    redis.defineCommand('switchyardCancelRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
    this.scripts = redis as unknown as JournalScripts;
    this.journals = `${prefix}:settling:`;
    this.checkpoints = `${prefix}:checkpoint:`;
  }

  /**
   * Records the promise; resolves once Redis holds it (only then may the reply go out). A close whose result is the
   * reply's payload itself (text keeps what it replied) is written once: the row names the payload instead.
   */
  async promise(organizationId: string, s: PromisedSettlement): Promise<void> {
    const stored = s.message.type === 'done' && s.row.result === s.message.payload ? { ...s, row: { ...s.row, result: RESULT_IS_PAYLOAD } } : s;
    const written = await this.scripts.switchyardPromise(this.journals + organizationId, s.row.id, JSON.stringify(stored), Date.now(), CANCEL_FENCE_MS);
    if (written === 0) throw new PromiseRefused(s.row.id);
  }

  /**
   * A cancel's fence on the generation, taken before the cancel reads its state and released after its commit: while it
   * stands no worker can promise the generation's settlement (`promise` is refused, so the worker commits before it
   * replies, and whichever ending commits first stands). False when a promise is already there: that reply went out,
   * and the cancel keeps it instead (`keep`).
   */
  async fenceForCancel(organizationId: string, generationId: string): Promise<boolean> {
    return (await this.scripts.switchyardCancelFence(this.journals + organizationId, generationId, `${CANCEL_MARK}${Date.now()}}`)) === 1;
  }

  /** Releases a cancel's fence (a promise written since, after the fence ran out, stays). */
  async releaseCancel(organizationId: string, generationId: string): Promise<void> {
    await this.scripts.switchyardCancelRelease(this.journals + organizationId, generationId);
  }

  /** The promise of one generation, or null. */
  async read(organizationId: string, generationId: string): Promise<PromisedSettlement | null> {
    const text = await this.redis.hget(this.journals + organizationId, generationId);
    if (!text || isFence(text)) return null;
    const s = JSON.parse(text) as PromisedSettlement;
    if (s.row.result === RESULT_IS_PAYLOAD && s.message.type === 'done') s.row.result = s.message.payload;
    return s;
  }

  /** The promise is kept (the close is committed, or another ending had won). */
  async kept(organizationId: string, generationId: string): Promise<void> {
    await this.redis.hdel(this.journals + organizationId, generationId);
  }

  /**
   * `kept` for the run that made the promise, at the end of its job: the erase is queued on the job connection and
   * not waited for, so the job's completion, which BullMQ sends in the same tick, leaves in the same write after it
   * (shared/queue/redis.ts coalesceWrites) and the two replies come back together: one socket write a request fewer.
   * Redis applies the two in order, so a job that completed has no promise left; a process that dies
   * before the write loses both, and the stalled job's re-run keeps the promise (`keep`). An erase that fails leaves the
   * entry until a read that waits for it finds its generation ended and erases it.
   */
  erase(organizationId: string, generationId: string): void {
    this.eraseVia.hdel(this.journals + organizationId, generationId).catch(() => undefined);
  }

  /**
   * Keeps the promise another run made for a generation, if there is one: commits its close and sends its reply again
   * (the run may have died between the two). The job re-run after a stall, the reaper and a cancel call it first, so
   * a generation whose reply showed a cost is settled at that cost and its provider is not called again.
   */
  async keep(organizationId: string, generationId: string, ledger: PromiseKeeper): Promise<boolean> {
    const s = await this.read(organizationId, generationId);
    if (!s) return this.keepCheckpoint(generationId, ledger);
    if (s.open) await ledger.openDrawn(s.open);
    await ledger.close(s.row);
    await new GenerationPublisher(this.redis, s.replyTo, generationId, this.buses).send(s.message);
    await this.kept(organizationId, generationId);
    await this.eraseCheckpoint(generationId);
    return true;
  }

  /**
   * A stream's checkpoint (decisions.md section 4, the bounded exception): the settlement of what it has delivered so
   * far, as a cut would settle it, written by its run every second or so while content goes out
   * (shared/billing/stream-checkpoints.ts). Whoever ends the generation after that run died or stood still past its
   * lock keeps it (`keep`: the job's re-run, the reaper, an orphan's run; a cancel that found no worker to end it), so what
   * reached the client before the last checkpoint is charged; the run that ends the stream itself erases it.
   */
  async checkpoint(generationId: string, s: PromisedSettlement): Promise<void> {
    // The text so far is written once: the row's result is the message's payload (as a promise's: `promise`).
    const payload = (s.message as { payload?: unknown }).payload;
    const stored = payload !== undefined && s.row.result === payload ? { ...s, row: { ...s.row, result: RESULT_IS_PAYLOAD } } : s;
    await this.redis.set(this.checkpoints + generationId, JSON.stringify(stored), 'PX', CHECKPOINT_TTL_MS);
  }

  async eraseCheckpoint(generationId: string): Promise<void> {
    await this.redis.del(this.checkpoints + generationId);
  }

  /**
   * Keeps a stream's checkpoint, if there is one: commits the charge it holds (first the record it carries, one not
   * committed when it was written: its run's process died with it) and, when that is how the generation ends,
   * sends its last message with what was charged. `cancelled`: as a cancel through the API ends a stream (cancelled,
   * charged for what was produced). True when there was one (the generation has ended either way).
   */
  async keepCheckpoint(generationId: string, ledger: PromiseKeeper, opts: { cancelled?: boolean } = {}): Promise<boolean> {
    const text = await this.redis.get(this.checkpoints + generationId);
    if (!text) return false;
    const s = JSON.parse(text) as PromisedSettlement;
    const payload = (s.message as { payload?: { cost?: string } }).payload;
    if (s.row.result === RESULT_IS_PAYLOAD) s.row.result = payload;
    const row: CloseRow = opts.cancelled ? { ...s.row, status: 'cancelled', error: null, finish_reason: 'cancelled' } : s.row;
    if (s.open) await ledger.openDrawn(s.open);
    const outcome = await ledger.close(row);
    if (outcome.applied) {
      if (payload) payload.cost = outcome.charged.toFixed(10);
      const message: GenerationEvent = opts.cancelled ? { type: 'cancelled', payload } : s.message;
      await new GenerationPublisher(this.redis, s.replyTo, generationId, this.buses).send(message);
    }
    await this.eraseCheckpoint(generationId);
    return true;
  }

  /**
   * Promises that carry a record and are older than `minAgeMs`, in every organization (SCAN over the journal's keys):
   * the reaper keeps those whose job no longer runs, since a generation never recorded is not among the stuck
   * generations it finds in the database.
   */
  async withRecordsOlderThan(minAgeMs: number, now = Date.now()): Promise<Array<{ organizationId: string; generationId: string; open: DrawnRow }>> {
    const found: Array<{ organizationId: string; generationId: string; open: DrawnRow }> = [];
    for (const key of await scanKeys(this.redis, `${this.journals}*`)) {
      for (const [generationId, text] of Object.entries(await this.redis.hgetall(key))) {
        if (isFence(text)) continue;
        const s = JSON.parse(text) as PromisedSettlement;
        if (s.open && (s.at ?? 0) <= now - minAgeMs) found.push({ organizationId: key.slice(this.journals.length), generationId, open: s.open });
      }
    }
    return found;
  }

  /**
   * Waits until the settlements promised to the organization when called (or just `generationIds` of them) are
   * committed, at most `timeoutMs`. True when there was something to wait for. A Redis failure waits for nothing:
   * the read then answers from the database as it stands. Nor does a PostgreSQL that is away (`stillRunning` fails,
   * asked once the wait is PROBE_AFTER_MS old): no promise can be kept then, and the read goes on to its 503 at once.
   */
  async waitSettled(organizationId: string, opts: { generationIds?: string[]; timeoutMs?: number } = {}): Promise<boolean> {
    const key = this.journals + organizationId;
    try {
      let ids = opts.generationIds ?? (await this.redis.hkeys(key));
      if (opts.generationIds) ids = pending(ids, await this.redis.hmget(key, ...ids));
      if (!ids.length) return false;
      const start = Date.now();
      const deadline = start + (opts.timeoutMs ?? SETTLE_WAIT_MS);
      let probe: Promise<unknown> | undefined;
      let away = false;
      while (ids.length && Date.now() < deadline && !away) {
        await new Promise((r) => setTimeout(r, POLL_MS));
        ids = pending(ids, await this.redis.hmget(key, ...ids));
        if (!probe && ids.length && this.stillRunning && Date.now() - start >= PROBE_AFTER_MS) probe = this.stillRunning(ids).catch(() => (away = true));
      }
      if (ids.length && !away && this.stillRunning) {
        const running = await this.stillRunning(ids);
        const spent = ids.filter((id) => !running.has(id));
        if (spent.length) await this.redis.hdel(key, ...spent);
      }
      return true;
    } catch {
      return false;
    }
  }
}

/** The ids whose promises are still there (a cancel's fence is no promise: nothing to wait for). */
const pending = (ids: string[], values: Array<string | null>) => ids.filter((_, i) => values[i] !== null && !isFence(values[i]));

/**
 * The record of a generation granted from a lease (shared/billing/leases.ts), committing while its job runs in the
 * process that drew it and claimed the job (docs/architecture.md "Submitting"). The worker takes it from the process's
 * lane (shared/runtime/local-lane.ts), never from Redis. Its row lets the worker's settlement promise carry the record,
 * so the reply need not wait for that commit; the gateway and the worker, one event loop, agree through it on who
 * tells the client what when the record fails.
 */
export class PendingRecord {
  /** A `done` reached the client before the record was known to have failed: the promise must be kept. */
  replied = false;
  /** The record failed first: the client was told 503, and nothing is to be settled. */
  lost = false;
  /** The record has committed (a promise made now need not carry it). */
  done = false;
  /** Settles once the record's commit is known (rejects when it failed). */
  readonly committed: Promise<unknown>;
  /** The record's commit has started (once its job is claimed): `committed` settles as it does. */
  readonly commit: (commit: Promise<unknown>) => void;

  constructor(readonly row: DrawnRow) {
    let commit!: PendingRecord['commit'];
    this.committed = new Promise((resolve) => (commit = resolve));
    this.commit = commit;
    this.committed.then(
      () => (this.done = true),
      () => undefined,
    );
  }
}

/** What a stream cut now would be: its ending as its kind reports it, and its last message. */
export type CheckpointOutcome = Omit<PromisedSettlement, 'row'> & { finish: Finish };

/**
 * How stale a stream's last checkpoint may get while content goes out: a second, or this many output tokens
 * (decisions.md section 4: what a process that dies or freezes mid-stream may leave unpaid).
 */
export const CHECKPOINT_MS = 1_000;
export const CHECKPOINT_TOKENS = 200;

/**
 * How long a stream's record drawn from a lease waits for its close before it is written alone: a stream ending sooner
 * is written once, ended (round 37). A process that dies meanwhile leaves no record, and unpaid what its stream
 * delivered: what it leaves unpaid without a checkpoint anyway (decisions.md section 4), so no longer than CHECKPOINT_MS;
 * the lease's money goes back with the lease (the reaper), as the job's re-run finds no record to end.
 */
export const STREAM_RECORD_WAIT_MS = CHECKPOINT_MS;

/**
 * A stream's checkpoints (shared/billing/settlement-journal.ts `checkpoint`): once content has reached its client, what
 * it has delivered is settled in advance in Redis whenever the last checkpoint is CHECKPOINT_MS or CHECKPOINT_TOKENS
 * behind, so whoever ends the generation after this run died or froze past its lock charges it. A stream shorter than
 * that writes none (nothing on its path); one write at a time, never awaited by the stream; none by a run not surely
 * holding its job. The run's own ending erases what it wrote (`ended`), after that ending is committed or promised.
 */
export class StreamCheckpoints {
  /** performance.now() and output tokens at the last checkpoint (or the first content). */
  private lastAt?: number;
  private lastTokens = 0;
  private writing?: Promise<void>;
  private written = false;

  constructor(
    private readonly journal: SettlementJournal,
    private readonly generationId: string,
    private readonly logger: Logger,
    private readonly lock?: JobLock,
  ) {}

  /** Content went out (`outputTokens` so far); `settlement` is the checkpoint to write, asked only when one is due. */
  delivered(outputTokens: number, settlement: () => CheckpointOutcome): void {
    const now = performance.now();
    if (this.lastAt === undefined) {
      this.lastAt = now;
      return;
    }
    if (this.writing || (now - this.lastAt < CHECKPOINT_MS && outputTokens - this.lastTokens < CHECKPOINT_TOKENS)) return;
    if (this.lock && !this.lock.surely()) return;
    this.lastAt = now;
    this.lastTokens = outputTokens;
    this.written = true;
    // What went out so far, written on the next turn: the delta it covers leaves in this turn's writes (an HTTP
    // response flushes on nextTick), so a process killed in between has charged no delta its client never got.
    const outcome = asSettlement(this.generationId, settlement());
    this.writing = new Promise<void>((r) => setImmediate(r))
      .then(() => this.journal.checkpoint(this.generationId, outcome))
      .catch((err: unknown) => void this.logger.warn('a stream checkpoint not written', { generationId: this.generationId, err }))
      .finally(() => (this.writing = undefined));
  }

  /** The stream's ending is committed or promised: what was checkpointed is erased (a write in flight first). */
  async ended(): Promise<void> {
    await this.writing;
    if (!this.written) return;
    await this.journal.eraseCheckpoint(this.generationId).catch((err: unknown) => void this.logger.warn('a stream checkpoint not erased (it lapses; whoever keeps it finds the generation ended)', { generationId: this.generationId, err }));
  }
}

function asSettlement(generationId: string, { finish, ...rest }: CheckpointOutcome): PromisedSettlement {
  return { ...rest, row: closeRowOf(generationId, finish) };
}
