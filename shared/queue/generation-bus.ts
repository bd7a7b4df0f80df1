import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { Cluster } from 'ioredis';
import type { TextStreamEvent } from '../providers/provider.types';
import type { StoredError } from '../errors/app-error';
import { listenForJson } from './redis';
import { JobLost, type JobLock } from './job-lock';

/** What a worker tells the API process that waits for a generation. */
export type GenerationEvent =
  | { type: 'started'; endpoint: string; model: string }
  | { type: 'delta'; event: TextStreamEvent }
  | { type: 'done'; payload: unknown }
  | { type: 'failed'; error: StoredError; payload?: unknown }
  /** `payload`: a stream cancelled after content went out, charged for what was produced (its cost is what was charged). */
  | { type: 'cancelled'; payload?: unknown }
  /** Sent by the bus itself after the subscriber reconnects: messages may have been lost, read the database. */
  | { type: 'recheck' };

export type BusMessage = GenerationEvent & { id: string; seq: number };

/** Id of the bus's own probe messages on a Redis Cluster (never a generation id). */
const PROBE = '__probe__';

/**
 * The reply channels of one process's API (the process's lane: shared/runtime/local-lane.ts). A worker whose job's
 * `replyTo` names one of them (the API request waits in the same process: `npm start` serves both) hands its messages
 * over directly, without a PUBLISH and the subscriber's parse; Redis carries only what crosses processes. By channel.
 */
export class LocalBuses extends Map<string, GenerationBus> {}

/**
 * Worker → API delivery over Redis pub/sub. Each API process subscribes ONCE to its own reply channel and
 * names it in every job it enqueues (`replyTo`), so a request costs no SUBSCRIBE round trips, and a stream
 * started on one API process is served whichever worker process runs it. The database stays the source of
 * truth: a waiter that misses its message (a Redis outage) falls back to reading the generation.
 */
export class GenerationBus {
  readonly channel: string;
  private readonly waiters = new Map<string, (m: BusMessage) => void>();
  private started?: Promise<void>;
  private readonly probes = new Map<string, () => void>();

  constructor(
    private readonly pub: Redis,
    private readonly sub: Redis | null,
    prefix: string,
    /** The process's reply channels: its workers hand this bus their messages directly; without it, only through Redis. */
    private readonly local?: LocalBuses,
  ) {
    this.channel = `${prefix}:reply:${randomUUID()}`;
    local?.set(this.channel, this);
  }

  /** Stops taking messages from workers of this process. */
  close(): void {
    if (this.local?.get(this.channel) === this) this.local.delete(this.channel);
  }

  /** A message from a worker of this process: handed to its waiter as a message from Redis would be. */
  deliver(m: BusMessage): void {
    try {
      this.waiters.get(m.id)?.(m);
    } catch {
      // A waiter's failure is the waiter's: it must not fail the worker that delivered.
    }
  }

  /** Subscribes the API process's reply channel (idempotent). */
  start(): Promise<void> {
    if (!this.sub) throw new Error('this bus has no subscriber connection');
    const sub = this.sub;
    this.started ??= (async () => {
      // ioredis resubscribes after a reconnect, but what was published meanwhile is gone: tell every waiter.
      let subscribed = false;
      const recheck = () => {
        if (!subscribed) return;
        for (const [id, handler] of this.waiters) handler({ type: 'recheck', id, seq: 0 });
      };
      if ((sub as unknown) instanceof Cluster) {
        // On a Redis Cluster the subscription lives on one node, and ioredis moves it to another in the background
        // after a reconnect or failover: tell the waiters only once a probe of our own comes back through it, so
        // the database they re-read is not older than the subscription.
        let probing = false;
        const probeOnce = async (): Promise<boolean> => {
          const token = randomUUID();
          const back = new Promise<void>((resolve) => this.probes.set(token, resolve));
          try {
            await publish(this.pub, this.channel, JSON.stringify({ id: PROBE, seq: 0, type: 'recheck', token })).catch(() => undefined);
            return await Promise.race([back.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 300).unref())]);
          } finally {
            this.probes.delete(token);
          }
        };
        // `moved`: a node left or the connection came back. Otherwise a periodic check that the subscription
        // still delivers; only when it does not are the waiters told.
        const ensure = async (moved: boolean) => {
          if (!subscribed || probing) return;
          probing = true;
          let lost = false;
          try {
            // Two probes answered in a row, 300 ms apart: ioredis may still swap the subscriber node right after
            // the first one came back.
            let streak = 0;
            for (let i = 0; i < 100 && streak < (moved ? 2 : 1) && sub.status !== 'end' && this.pub.status !== 'end'; i++) {
              if (await probeOnce()) {
                streak++;
                if (streak < 2 && moved) await new Promise((r) => setTimeout(r, 300).unref());
              } else {
                streak = 0;
                lost = true;
                // ioredis sometimes picks a new subscriber node without carrying the channel over: subscribe
                // again (harmless when it is there).
                if (i % 3 === 2) await sub.subscribe(this.channel).catch(() => undefined);
              }
            }
          } finally {
            probing = false;
          }
          if (moved || lost) recheck();
        };
        sub.on('ready', () => void ensure(true));
        sub.on('-node', () => void ensure(true));
        const every = setInterval(() => void ensure(false), 5000);
        every.unref();
        sub.once('end', () => clearInterval(every));
      } else {
        sub.on('ready', recheck);
      }
      // The connection may carry other channels too (shared/runtime/key-changes.ts): only this one's are read.
      await listenForJson(sub, this.channel, (m) => {
        if (m.id === PROBE) this.probes.get((m.token as string | undefined) ?? '')?.();
        else this.waiters.get(m.id as string)?.(m as unknown as BusMessage);
      });
      subscribed = true;
    })();
    return this.started;
  }

  /** Receives the messages of one generation until the returned function is called. */
  listen(id: string, handler: (m: BusMessage) => void): () => void {
    this.waiters.set(id, handler);
    return () => {
      if (this.waiters.get(id) === handler) this.waiters.delete(id);
    };
  }

  get listening(): number {
    return this.waiters.size;
  }
}

/**
 * The worker side: numbered messages to the reply channel named in the job. With the job's lock (shared/queue/job-lock.ts),
 * a run that lost its job sends nothing more of it: `send` and `ensureOwned` reject with JobLost.
 */
export class GenerationPublisher {
  private seq = 0;
  constructor(
    private readonly pub: Redis,
    private readonly channel: string | null,
    private readonly id: string,
    /** The reply channels of this process: a waiter here gets the message directly. */
    private readonly local?: LocalBuses,
    private readonly lock?: JobLock,
  ) {}

  /** Resolves while this run holds its job; rejects with JobLost once it has lost it. */
  ensureOwned(): Promise<void> {
    if (!this.lock || this.lock.surely()) return Promise.resolve();
    return this.lock.held().then((held) => {
      if (!held) throw new JobLost(this.id);
    });
  }

  /** Sends the next numbered message: to a waiter of this process at once (before it resolves), else through Redis. */
  async send(event: GenerationEvent): Promise<unknown> {
    const channel = this.channel;
    if (!channel) return;
    // Checked at every message, without I/O while the lock is surely held (a delta's cost: one clock read).
    if (this.lock && !this.lock.surely()) await this.ensureOwned();
    const message: BusMessage = { ...event, id: this.id, seq: ++this.seq };
    const local = this.local?.get(channel);
    if (local) return local.deliver(message);
    return publish(this.pub, channel, JSON.stringify(message)).catch(() => undefined);
  }
}

// A Redis Cluster connection sends a keyless PUBLISH to a random node each time, and messages reach the
// subscriber in the order each node relays them: deltas would arrive out of order. A script naming the channel
// as its key always runs on the master of the channel's slot, so one generation's messages keep their order.
const PUBLISH_SCRIPT = `return redis.call('PUBLISH', KEYS[1], ARGV[1])`;

function publish(pub: Redis, channel: string, text: string): Promise<unknown> {
  if (!((pub as unknown) instanceof Cluster)) return pub.publish(channel, text);
  if (!('syPublish' in pub)) pub.defineCommand('syPublish', { numberOfKeys: 1, lua: PUBLISH_SCRIPT });
  return (pub as unknown as { syPublish(channel: string, text: string): Promise<number> }).syPublish(channel, text);
}

/**
 * Why a running job is told to stop (the reason its stop signal carries):
 * - `cancelled`: the generation is cancelled. Either the API ended it already (uncharged) and the job only stops
 *   calling its provider, or (a stream cancelled through the API: GenerationGateway.cancel `chargeStreamed`) the job
 *   ends it as cancelled, charging what it produced when content had gone out; the first ending stands.
 * - `timeout`: the API stopped waiting for a stream that had already sent content (SYNC_WAIT_MS of silence).
 * - `client_gone`: the client of a stream that had already received content disconnected.
 * For `timeout` and `client_gone` (and `cancelled` after content) the job settles the generation itself, charging what was produced
 * (decisions.md section 4), and tells the API (its final message carries that cost).
 */
export type StopReason = 'cancelled' | 'timeout' | 'client_gone';

const STOP_REASONS: ReadonlySet<string> = new Set<StopReason>(['cancelled', 'timeout', 'client_gone']);

export function isStopReason(v: unknown): v is StopReason {
  return typeof v === 'string' && STOP_REASONS.has(v);
}

/** One channel per deployment (queue prefix): every worker process listens, the one running the job acts. */
export function cancelChannel(prefix: string): string {
  return `${prefix}:cancel`;
}

interface CancelMessage {
  id: string;
  reason: StopReason;
}

/** API side: asks whichever worker runs generation `id` to abort its upstream call. */
export function publishStop(redis: Redis, prefix: string, id: string, reason: StopReason): Promise<unknown> {
  const message: CancelMessage = { id, reason };
  return redis.publish(cancelChannel(prefix), JSON.stringify(message)).catch(() => undefined);
}

/**
 * Worker side: subscribes `sub` (a connection of its own, in subscriber mode from now on) and calls `onStop` for
 * every well-formed message. Resolves once subscribed.
 */
export function listenForStops(sub: Redis, prefix: string, onStop: (id: string, reason: StopReason) => void): Promise<void> {
  return listenForJson(sub, cancelChannel(prefix), (m) => {
    if (typeof m.id === 'string' && isStopReason(m.reason)) onStop(m.id, m.reason);
  });
}

/**
 * The stop signals of the jobs this process runs, by job id (the generation id): the processor takes one when its job
 * starts and gives it back when it ends; a stop message (listenForStops) aborts it. BullMQ would make an
 * AbortController for every job of a processor taking a third parameter; the text and embeddings processors take two,
 * and their jobs' signals come from here.
 */
export class JobStops {
  private readonly running = new Map<string, AbortController>();

  start(jobId: string): AbortSignal {
    const controller = new AbortController();
    this.running.set(jobId, controller);
    return controller.signal;
  }

  end(jobId: string, signal: AbortSignal): void {
    if (this.running.get(jobId)?.signal === signal) this.running.delete(jobId);
  }

  /** The stop of a job running here (a media run's long calls listen to it). */
  of(jobId: string): AbortSignal | undefined {
    return this.running.get(jobId)?.signal;
  }

  /** True when a job of this process was told (a stop for another process's job finds nothing here). */
  abort(jobId: string, reason: StopReason): boolean {
    const stop = this.running.get(jobId);
    stop?.abort(reason);
    return stop !== undefined;
  }
}

/** The stop reason of an aborted job signal (`cancelled` for anything else, e.g. a shutdown). */
export function stopReasonOf(signal: AbortSignal | undefined): StopReason | undefined {
  if (!signal?.aborted) return undefined;
  return isStopReason(signal.reason) ? signal.reason : 'cancelled';
}

/** The messages of one generation as they arrive, read one at a time with a deadline. */
export class Mailbox {
  private readonly queue: BusMessage[] = [];
  /** Resolves the wait of `next`, while it waits. */
  private wake?: () => void;
  private closed = false;

  put(m: BusMessage): void {
    this.queue.push(m);
    this.wake?.();
  }

  /** The next message, or null when none arrives within `timeoutMs` (or the mailbox is closed). */
  async next(timeoutMs: number): Promise<BusMessage | null> {
    if (this.queue.length) return this.queue.shift()!;
    if (this.closed) return null;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      this.wake = resolve;
    });
    clearTimeout(timer);
    this.wake = undefined;
    return this.queue.shift() ?? null;
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }
}
