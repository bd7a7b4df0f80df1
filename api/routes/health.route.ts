import { Router } from 'express';
import type { AppContext } from '../app-context';

/** GET /healthz (the process is up) and GET /readyz (database, Redis and workers reachable). No auth. */
export function healthRoutes(ctx: AppContext): Router {
  const r = Router();
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    const within = <T>(p: Promise<T>) => Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('timeout')), 2000).unref())]);
    const probe = async (fn: () => Promise<unknown>) => within(fn()).then((v) => v !== false, () => false);
    const [database, redis, workers] = await Promise.all([
      probe(() => ctx.databaseReady()),
      probe(() => ctx.redis.ping()),
      probe(() => ctx.workersReady()),
    ]);
    const ok = database && redis && workers;
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'unavailable', checks: { database, redis, workers } });
  });
  return r;
}
