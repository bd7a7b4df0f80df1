import type Redis from 'ioredis';
import type { SseEvent } from '../../shared/formats/responses-stream.formatter';

/** Events that end a Responses stream. */
export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/**
 * The Server-Sent Events of a background streamed response, kept in Redis (a list, index = sequence_number) so a
 * client can resume with GET /v1/responses/{id}?stream=true&starting_after=N from any API process. Kept for
 * `ttlSeconds` after the last event.
 */
export class ResponseStreamLog {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ttlSeconds = 3600,
  ) {}

  private key(id: string): string {
    return `${this.prefix}:responses:sse:${id}`;
  }

  async append(id: string, events: SseEvent[]): Promise<void> {
    if (events.length === 0) return;
    const key = this.key(id);
    await this.redis.multi().rpush(key, ...events.map((e) => JSON.stringify(e))).expire(key, this.ttlSeconds).exec();
  }

  /** Events from sequence number `from` on. */
  async read(id: string, from: number): Promise<SseEvent[]> {
    return (await this.redis.lrange(this.key(id), Math.max(0, from), -1)).map((e) => JSON.parse(e) as SseEvent);
  }

  async forget(id: string): Promise<void> {
    await this.redis.del(this.key(id));
  }
}
