"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.buildContext = buildContext;
const reject_nul_1 = require("./middleware/reject-nul");
const idempotency_1 = require("./middleware/idempotency");
const accounts_service_1 = require("../shared/services/accounts.service");
const key_info_service_1 = require("../shared/services/key-info.service");
const ledger_1 = require("../shared/billing/ledger");
const bullmq_1 = require("bullmq");
const auth_1 = require("./middleware/auth");
const generation_bus_1 = require("../shared/queue/generation-bus");
const redis_1 = require("../shared/queue/redis");
const queue_names_1 = require("../shared/queue/queue-names");
const generation_service_1 = require("../shared/services/generation.service");
const endpoint_stats_store_1 = require("../shared/services/endpoint-stats.store");
const generation_gateway_1 = require("./services/generation-gateway");
const route_planner_1 = require("./services/route-planner");
const text_service_1 = require("./services/text.service");
const embeddings_service_1 = require("./services/embeddings.service");
const typed_questions_service_1 = require("./services/typed-questions.service");
const images_service_1 = require("./services/images.service");
const media_service_1 = require("./services/media.service");
const media_operations_service_1 = require("./services/media-operations.service");
const media_records_1 = require("./services/media-records");
const callbacks_service_1 = require("../shared/services/callbacks.service");
const history_service_1 = require("../shared/services/history.service");
const rate_limit_1 = require("./middleware/rate-limit");
const metrics_1 = require("../shared/metrics/metrics");
const files_service_1 = require("../shared/services/files.service");
const create_blob_store_1 = require("../shared/storage/create-blob-store");
function buildContext(deps) {
    const clock = deps.clock ?? (() => new Date());
    const auth = new auth_1.Authenticator(deps.db, deps.secret, deps.authCacheMs ?? 1000);
    const queues = Object.fromEntries(queue_names_1.QUEUE_NAMES.map((q) => [q, new bullmq_1.Queue(q, { connection: deps.redis, prefix: deps.config.queuePrefix })]));
    const bus = new generation_bus_1.GenerationBus(deps.redis, deps.subscriber, deps.config.queuePrefix);
    const stats = new endpoint_stats_store_1.EndpointStatsStore(deps.redis, deps.config.queuePrefix);
    const metrics = deps.metrics ?? (0, metrics_1.createMetrics)();
    const ledger = new ledger_1.Ledger(deps.db, clock, { pool: deps.pool, metrics });
    const generations = new generation_service_1.GenerationService(deps.db, clock, ledger);
    const gateway = new generation_gateway_1.GenerationGateway(generations, queues, bus, deps.logger, { redis: deps.redis, prefix: deps.config.queuePrefix });
    const planner = new route_planner_1.RoutePlanner(deps.catalog, stats);
    metrics.trackQueues(queues);
    const files = new files_service_1.FilesService({
        db: deps.db,
        store: deps.blobStore ?? (0, create_blob_store_1.createBlobStore)(deps.config),
        secret: deps.secret,
        baseUrl: (0, files_service_1.filesBaseUrl)(deps.config),
        urlTtlSeconds: deps.config.fileUrlTtlSeconds,
        clock,
        onError: (message, meta) => deps.logger.warn(message, meta),
    });
    const syncWaitMs = deps.config.syncWaitMs;
    const records = new media_records_1.MediaRecords({ db: deps.db, files, gateway, syncWaitMs, callbackAllowPrivate: deps.config.callbackAllowPrivate });
    return {
        ...deps,
        queues,
        bus,
        generations,
        stats,
        gateway,
        planner,
        text: new text_service_1.TextService({ db: deps.db, planner, gateway, syncWaitMs }),
        embeddings: new embeddings_service_1.EmbeddingsService({ catalog: deps.catalog, planner, gateway, syncWaitMs }),
        questions: new typed_questions_service_1.TypedQuestionsService({ db: deps.db, planner, gateway, syncWaitMs }),
        images: new images_service_1.ImagesService({ planner, gateway, records, files }),
        media: new media_service_1.MediaService({ planner, gateway, records, files, callbacks: new callbacks_service_1.CallbackService(queues.callbacks) }),
        mediaOperations: new media_operations_service_1.MediaOperationsService({ catalog: deps.catalog, planner, gateway, records }),
        metrics,
        files,
        history: new history_service_1.HistoryService(deps.db),
        databaseReady: () => deps.db.$queryRaw `SELECT 1`,
        ready: async () => {
            // The subscriber too: a SUBSCRIBE sent while ioredis still runs its ready check can be lost, leaving the
            // reply channel deaf (every synchronous wait would then run out).
            await Promise.all([(0, redis_1.whenReady)(deps.redis), (0, redis_1.whenReady)(deps.subscriber)]);
            await bus.start();
        },
        close: async () => {
            bus.close();
            await Promise.all(Object.values(queues).map((q) => q.close()));
        },
        clock,
        workersReady: deps.workersReady ?? (async () => true),
        auth,
        // The body is parsed only after authentication and the rate limit: a stranger's 10 MiB body costs no parsing.
        guard: [(0, auth_1.authMiddleware)(auth), (0, rate_limit_1.rateLimitMiddleware)(deps.redis, deps.config.queuePrefix, deps.config.defaultRateLimitPerMinute, clock), ...(0, reject_nul_1.jsonBody)(deps.config.maxBodyBytes), idempotency_1.idempotencyKey],
        accounts: new accounts_service_1.AccountsService(deps.db, deps.secret, clock),
        keyInfo: new key_info_service_1.KeyInfoService(deps.db, clock),
        ledger,
    };
}
