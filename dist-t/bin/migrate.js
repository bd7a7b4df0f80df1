"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
const env_1 = require("../shared/config/env");
const logger_1 = require("../shared/logger");
const services_1 = require("../shared/runtime/services");
/** `npm run db:migrate`: applies prisma/migrations to DATABASE_URL (or the embedded database). */
const config = (0, env_1.loadConfig)();
(0, services_1.resolveServices)({ ...config, redisUrl: config.redisUrl ?? 'redis://unused' }, (0, logger_1.createLogger)({ level: config.logLevel, service: 'switchyard-migrate' }), { writeRuntimeFile: false })
    .then((s) => s.stop())
    .catch((e) => {
    console.error(e.message);
    process.exit(1);
});
