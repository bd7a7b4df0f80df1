/**
 * Case 2. Redis dies (SIGKILL) under steady load and comes back 3 s later on the same port and append-only
 * file. While it is away the API answers 503 SERVICE_UNAVAILABLE at once (no hang, no 500); afterwards it
 * recovers by itself; no generation is left pending or processing.
 */
import { startCluster, type Cluster } from './helpers/cluster';
import { runOutage } from './helpers/outage';

const SYNC_WAIT_MS = 8000;
let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'redis-restart', env: { SYNC_WAIT_MS: String(SYNC_WAIT_MS) } });
});
afterAll(async () => {
  await c?.close();
});

test('Redis restarted under load: 503 while away, recovery, nothing stuck', async () => {
  const failures = await runOutage({
    c,
    name: '2. Redis restart under load',
    injected: 'Redis SIGKILLed under load (6 sync callers, background requests, 3 callers reading balances; provider latency 300 ms), back after 3 s on the same port and append-only file',
    syncWaitMs: SYNC_WAIT_MS,
    down: () => c.redis.stop('SIGKILL'),
    up: () => c.redis.start(),
  });
  expect(failures).toEqual([]);
});
