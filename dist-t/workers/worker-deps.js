"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.buildWorkerDeps = buildWorkerDeps;
const generation_service_1 = require("../shared/services/generation.service");
const ledger_1 = require("../shared/billing/ledger");
const endpoint_stats_store_1 = require("../shared/services/endpoint-stats.store");
const provider_limiter_1 = require("../shared/services/provider-limiter");
const metrics_1 = require("../shared/metrics/metrics");
const files_service_1 = require("../shared/services/files.service");
const create_blob_store_1 = require("../shared/storage/create-blob-store");
const secret_1 = require("../shared/runtime/secret");
function buildWorkerDeps(d) {
    const clock = d.clock ?? (() => new Date());
    const { secret, blobStore, metrics: _m, pool, ...rest } = d;
    const files = d.files ??
        new files_service_1.FilesService({
            db: d.db,
            store: blobStore ?? (0, create_blob_store_1.createBlobStore)(d.config),
            // Resolved on first signature only: tests that never store files never touch the secret file.
            secret: secret ?? (() => (0, secret_1.resolveSecret)(d.config)),
            baseUrl: (0, files_service_1.filesBaseUrl)(d.config),
            urlTtlSeconds: d.config.fileUrlTtlSeconds,
            clock,
            onError: (message, meta) => d.logger.warn(message, meta),
        });
    const metrics = d.metrics ?? (0, metrics_1.createMetrics)();
    return { ...rest, clock, files, metrics, limiter: new provider_limiter_1.ProviderLimiter(), generations: new generation_service_1.GenerationService(d.db, clock, new ledger_1.Ledger(d.db, clock, { pool, metrics })), stats: new endpoint_stats_store_1.EndpointStatsStore(d.redis, d.config.queuePrefix) };
}
