import { bootstrap, onShutdown } from '../shared/runtime/bootstrap';
import { startWeb } from '../api/main';
import { startWorkers } from '../workers/main';

/**
 * `npm start`: API and workers in one process, with embedded PostgreSQL and Redis unless DATABASE_URL and
 * REDIS_URL are set (decisions.md section 1). `--demo` adds the fake providers and the demo catalog.
 * On SIGTERM the API stops taking requests and finishes those in flight, then the workers finish their jobs.
 */
bootstrap('all')
  .then(async (rt) => {
    const pool = await startWorkers(rt);
    const web = await startWeb(rt);
    rt.onClose(() => pool.close());
    rt.onClose(() => web.close()); // runs first: stop taking requests before the workers stop
    onShutdown(rt.logger, () => rt.close(), rt.config.shutdownTimeoutMs);
  })
  .catch((e: Error) => {
    console.error(e.message);
    process.exit(1);
  });
