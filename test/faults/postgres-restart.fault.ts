/**
 * Case 3. PostgreSQL is stopped (fast shutdown: open transactions rolled back, connections cut) under steady
 * load and started again 3 s later. The same must hold as for Redis: 503 while away, recovery, nothing stuck,
 * and the ledger still sums to the balances.
 */
import { startCluster, type Cluster } from './helpers/cluster';
import { runOutage } from './helpers/outage';

const SYNC_WAIT_MS = 8000;
let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'pg-restart', env: { SYNC_WAIT_MS: String(SYNC_WAIT_MS) } });
});
afterAll(async () => {
  await c?.close();
});

test('PostgreSQL restarted under load: 503 while away, recovery, nothing stuck, ledger = balances', async () => {
  const failures = await runOutage({
    c,
    name: '3. PostgreSQL restart under load',
    injected: 'PostgreSQL stopped (fast shutdown) under load (6 sync callers, background requests, 3 callers reading balances; provider latency 300 ms), started again after 3 s',
    syncWaitMs: SYNC_WAIT_MS,
    down: () => c.pg.stop(),
    up: () => c.pg.start(),
  });
  expect(failures).toEqual([]);
});
