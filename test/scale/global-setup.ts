import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findOnPath } from '../../shared/runtime/process-utils';
import baseSetup from '../helpers/global-setup';
import { TEST_PG_URL } from '../helpers/test-env';
import { startPgBouncer } from './helpers/pgbouncer';
import { startRedisCluster } from './helpers/redis-cluster';

/**
 * Builds the template database (directly: migrations take a session advisory lock), then starts a Redis Cluster
 * and a PgBouncer and points the test helpers at them: TEST_REDIS_URL (redis+cluster://…) and
 * TEST_APP_DATABASE_URL (PgBouncer). SCALE_REDIS=single or SCALE_PGBOUNCER=0 leave one of them out.
 */
export default async function scaleSetup(): Promise<void> {
  const need = [...(process.env.SCALE_REDIS !== 'single' ? ['redis-server', 'redis-cli'] : []), ...(process.env.SCALE_PGBOUNCER !== '0' ? ['pgbouncer'] : [])];
  const missing = need.filter((b) => !findOnPath(b));
  if (missing.length) {
    throw new Error(`the scale suite needs ${missing.join(', ')} on PATH (Debian: apt-get install -y redis-server pgbouncer); SCALE_REDIS=single or SCALE_PGBOUNCER=0 leave one out`);
  }
  await baseSetup();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-scale-'));
  fs.chmodSync(dir, 0o755); // PgBouncer runs as another user when we are root
  const g = globalThis as { __syScale?: { stop(): Promise<void> } };
  const stops: Array<() => Promise<void>> = [];
  g.__syScale = {
    async stop() {
      for (const s of stops) await s().catch(() => undefined);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  if (process.env.SCALE_REDIS !== 'single') {
    const cluster = await startRedisCluster(path.join(dir, 'cluster'));
    stops.push(() => cluster.stop());
    process.env.TEST_REDIS_URL = cluster.url;
    process.env.SCALE_CLUSTER_PORTS = cluster.nodes.map((n) => n.port).join(',');
    process.env.SCALE_CLUSTER_DIR = path.join(dir, 'cluster');
  }
  if (process.env.SCALE_PGBOUNCER !== '0') {
    const bouncer = await startPgBouncer(path.join(dir, 'pgbouncer'), TEST_PG_URL);
    stops.push(() => bouncer.stop());
    process.env.TEST_APP_DATABASE_URL = bouncer.url;
  }
}
