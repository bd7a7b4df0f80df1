"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.startWeb = startWeb;
const app_1 = require("./app");
const bootstrap_1 = require("../shared/runtime/bootstrap");
const queue_names_1 = require("../shared/queue/queue-names");
/** Starts the HTTP API on a bootstrapped runtime; returns its stopper. */
async function startWeb(rt) {
    const subscriber = rt.patient('subscriber');
    const app = (0, app_1.createApp)({
        config: rt.config,
        db: rt.db,
        pool: rt.pool,
        redis: rt.redis,
        subscriber,
        catalog: rt.catalog,
        logger: rt.logger,
        secret: rt.secret,
        metrics: rt.metrics,
        workersReady: async () => (await app.locals.ctx.queues[queue_names_1.QUEUES.text].getWorkersCount()) > 0,
    });
    await app.locals.ctx.ready();
    const http = await (0, bootstrap_1.listen)(app, rt.config.port);
    rt.logger.info(`Switchyard API listening on http://localhost:${http.port}`);
    return {
        port: http.port,
        async close() {
            await http.close();
            await app.locals.ctx.close();
        },
    };
}
if (require.main === module) {
    (0, bootstrap_1.bootstrap)('web')
        .then(async (rt) => {
        const web = await startWeb(rt);
        rt.onClose(() => web.close());
        (0, bootstrap_1.onShutdown)(rt.logger, () => rt.close(), rt.config.shutdownTimeoutMs);
    })
        .catch((e) => {
        console.error(e.message);
        process.exit(1);
    });
}
