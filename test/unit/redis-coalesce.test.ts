import type { Socket } from 'node:net';
import { createRedis, whenReady } from '../../shared/queue/redis';
import { TEST_REDIS_URL } from '../helpers/test-env';

describe('createRedis: the commands of one tick leave in one socket write (real Redis)', () => {
  const redis = createRedis(TEST_REDIS_URL, { patient: true });
  beforeAll(() => whenReady(redis));
  afterAll(() => redis.disconnect());

  it('sends ten commands issued together as one writev, in order, each with its own reply', async () => {
    type Patchable = { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
    const stream = (redis as unknown as { stream: Socket }).stream as unknown as Patchable;
    const calls: number[] = [];
    const write = stream._write;
    const writev = stream._writev;
    stream._write = function (this: unknown, ...a: unknown[]) {
      calls.push(1);
      return write.apply(this, a);
    };
    stream._writev = function (this: unknown, ...a: unknown[]) {
      calls.push((a[0] as unknown[]).length);
      return writev.apply(this, a);
    };
    try {
      const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => redis.echo(`m${i}`)));
      expect(replies).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
      expect(calls).toEqual([10]);
      // A command alone in its tick is one write of one chunk.
      calls.length = 0;
      await redis.echo('alone');
      expect(calls).toEqual([1]);
    } finally {
      stream._write = write;
      stream._writev = writev;
    }
  });
});
