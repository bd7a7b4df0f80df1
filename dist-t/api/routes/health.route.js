"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.healthRoutes = healthRoutes;
const express_1 = require("express");
/** GET /healthz (the process is up) and GET /readyz (database, Redis and workers reachable). No auth. */
function healthRoutes(ctx) {
    const r = (0, express_1.Router)();
    r.get('/healthz', (_req, res) => {
        res.json({ status: 'ok' });
    });
    r.get('/readyz', async (_req, res) => {
        const within = (p) => Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 2000).unref())]);
        const probe = async (fn) => within(fn()).then((v) => v !== false, () => false);
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
