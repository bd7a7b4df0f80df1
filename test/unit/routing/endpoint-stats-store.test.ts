import { randomBytes } from 'node:crypto';
import { EndpointStatsStore } from '../../../shared/services/endpoint-stats.store';
import { createRedis, whenReady } from '../../../shared/queue/redis';
import { TEST_REDIS_URL } from '../../helpers/test-env';
import { waitFor } from '../../helpers/until';

describe('EndpointStatsStore (real Redis)', () => {
  const redis = createRedis(TEST_REDIS_URL, { patient: true });
  const prefix = `{t-${randomBytes(4).toString('hex')}}`;
  beforeAll(() => whenReady(redis));
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('writes samples in one batch a moment later, newest first, capped at 200 per endpoint', async () => {
    const store = new EndpointStatsStore(redis, prefix);
    const t0 = Date.now();
    for (let i = 0; i < 250; i++) store.record('p/a', { ok: true, at: t0 + i, ttftMs: 100 });
    store.record('p/b', { ok: false, at: t0 });
    expect(await redis.llen(`${prefix}:stats:p/a`)).toBe(0); // not yet: batched
    await waitFor('the batch written', async () => (await redis.llen(`${prefix}:stats:p/b`)) > 0);
    const a = await redis.lrange(`${prefix}:stats:p/a`, 0, -1);
    expect(a).toHaveLength(200);
    expect(JSON.parse(a[0]).a).toBe(t0 + 249);
    const stats = await new EndpointStatsStore(redis, prefix).refresh(['p/a', 'p/b'], t0 + 1000);
    expect(stats['p/a'].samples).toBe(200);
    expect(stats['p/b'].failureRate).toBe(1);
  });

  it('flush() writes what is pending at once (a worker pool closing)', async () => {
    const store = new EndpointStatsStore(redis, prefix);
    store.record('p/c', { ok: true, at: Date.now() });
    await store.flush();
    expect(await redis.llen(`${prefix}:stats:p/c`)).toBe(1);
  });
});
