import { loadConfig } from '../shared/config/env';
import { createLogger } from '../shared/logger';
import { resolveServices } from '../shared/runtime/services';

/** `npm run db:migrate`: applies prisma/migrations to DATABASE_URL (or the embedded database). */
const config = loadConfig();
resolveServices({ ...config, redisUrl: config.redisUrl ?? 'redis://unused' }, createLogger({ level: config.logLevel, service: 'switchyard-migrate' }), { writeRuntimeFile: false })
  .then((s) => s.stop())
  .catch((e: Error) => {
    console.error(e.message);
    process.exit(1);
  });
