import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import type { TextStreamEvent } from '../providers/provider.types';
import type { StoredError } from '../errors/app-error';

/** What a worker tells the API process that waits for a generation. */
export type GenerationEvent =
  | { type: 'started'; endpoint: string; model: string }
  | { type: 'delta'; event: TextStreamEvent }
  | { type: 'done'; payload: unknown }
  | { type: 'failed'; error: StoredError; payload?: unknown }
  | { type: 'cancelled' }
  /** Sent by the bus itself after the subscriber reconnects: messages may have been lost, read the database. */
  | { type: 'recheck' };

export type BusMessage = GenerationEvent & { id: string; seq: number };

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

  constructor(
    private readonly pub: Redis,
    private readonly sub: Redis | null,
    prefix: string,
  ) {
    this.channel = `${prefix}:reply:${randomUUID()}`;
  }

  /** Subscribes the API process's reply channel (idempotent). */
  start(): Promise<void> {
    if (!this.sub) throw new Error('this bus has no subscriber connection');
    const sub = this.sub;
    this.started ??= (async () => {
      // ioredis resubscribes after a reconnect, but what was published meanwhile is gone: tell every waiter.
      let subscribed = false;
      sub.on('ready', () => {
        if (!subscribed) return;
        for (const [id, handler] of this.waiters) handler({ type: 'recheck', id, seq: 0 });
      });
      sub.on('message', (_channel: string, text: string) => {
        let m: BusMessage;
        try {
          m = JSON.parse(text) as BusMessage;
        } catch {
          return;
        }
        this.waiters.get(m.id)?.(m);
      });
      await sub.subscribe(this.channel);
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

/** The worker side: numbered messages to the reply channel named in the job. */
export class GenerationPublisher {
  private seq = 0;
  constructor(
    private readonly pub: Redis,
    private readonly channel: string | null,
    private readonly id: string,
  ) {}

  send(event: GenerationEvent): Promise<unknown> {
    if (!this.channel) return Promise.resolve();
    const message: BusMessage = { ...event, id: this.id, seq: ++this.seq };
    return this.pub.publish(this.channel, JSON.stringify(message)).catch(() => undefined);
  }
}
