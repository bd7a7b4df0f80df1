import { createApp, serverOptionsFor } from './app';
import { bootstrap, listen, onShutdown, type Runtime } from '../shared/runtime/bootstrap';
import { QUEUES } from '../shared/queue/queue-names';
import { startBatchDriver } from './services/batch-driver-worker';

/** Starts the HTTP API on a bootstrapped runtime; returns its stopper. */
export async function startWeb(rt: Runtime): Promise<{ port: number; close(): Promise<void> }> {
  const subscriber = rt.patient('subscriber');
  const app = createApp({
    config: rt.config,
    db: rt.db,
    pool: rt.pool,
    readDb: rt.readDb,
    historyPools: rt.historyPools,
    redis: rt.redis,
    subscriber,
    catalog: rt.catalog,
    logger: rt.logger,
    secret: rt.secret,
    metrics: rt.metrics,
    ledger: rt.ledger,
    lane: rt.lane,
    tracing: rt.tracing,
    workersReady: async () => (await app.locals.ctx.queues[QUEUES.text].getWorkersCount()) > 0,
  });
  await app.locals.ctx.ready();
  const batches = startBatchDriver(app.locals.ctx.batchDriver, rt.patient('batches'), rt.config, rt.logger);
  const http = await listen(app, rt.config.port, serverOptionsFor(app));
  rt.logger.info(`Switchyard API listening on http://localhost:${http.port}`);
  return {
    port: http.port,
    async close() {
      await http.close();
      await batches.close();
      await app.locals.ctx.close();
    },
  };
}

if (require.main === module) {
  bootstrap('web')
    .then(async (rt) => {
      const web = await startWeb(rt);
      rt.onClose(() => web.close());
      onShutdown(rt.logger, () => rt.close(), rt.config.shutdownTimeoutMs);
    })
    .catch((e: Error) => {
      console.error(e.message);
      process.exit(1);
    });
}
