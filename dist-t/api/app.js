"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.createApp = createApp;
const express_1 = __importDefault(require("express"));
const app_context_1 = require("./app-context");
const trace_1 = require("./middleware/trace");
const metrics_1 = require("./middleware/metrics");
const metrics_route_1 = require("./routes/metrics.route");
const docs_route_1 = require("./routes/docs.route");
const dashboard_route_1 = require("./routes/dashboard.route");
const error_handler_1 = require("./middleware/error-handler");
const reject_nul_1 = require("./middleware/reject-nul");
const health_route_1 = require("./routes/health.route");
const key_route_1 = require("./routes/key.route");
const balance_route_1 = require("./routes/balance.route");
const keys_route_1 = require("./routes/keys.route");
const responses_route_1 = require("./routes/responses.route");
const chat_route_1 = require("./routes/chat.route");
const embeddings_route_1 = require("./routes/embeddings.route");
const typed_questions_route_1 = require("./routes/typed-questions.route");
const models_route_1 = require("./routes/models.route");
const storage_route_1 = require("./routes/storage.route");
const files_route_1 = require("./routes/files.route");
const history_route_1 = require("./routes/history.route");
const images_route_1 = require("./routes/images.route");
const media_route_1 = require("./routes/media.route");
const gated_1 = require("./routes/gated");
/** The Express application, without listen(): supertest and main.ts both use it. */
function createApp(deps) {
    const ctx = (0, app_context_1.buildContext)(deps);
    const app = (0, express_1.default)();
    app.disable('x-powered-by');
    app.set('etag', false);
    app.set('query parser', 'simple');
    app.locals.ctx = ctx;
    app.use(trace_1.traceMiddleware);
    app.use((0, metrics_1.metricsMiddleware)(ctx.metrics));
    // Each router is entered only by the paths it serves (api/routes/gated.ts): a request skips the others unwalked.
    app.use((0, gated_1.gated)((0, health_route_1.healthRoutes)(ctx)), (0, gated_1.gated)((0, metrics_route_1.metricsRoutes)(ctx)), (0, gated_1.gated)((0, docs_route_1.docsRoutes)(ctx)), (0, gated_1.gated)((0, dashboard_route_1.dashboardRoutes)(ctx)));
    // JSON bodies are parsed by ctx.guard, after authentication (api/middleware/reject-nul.ts).
    app.use(reject_nul_1.rejectNulCharacters);
    app.use((0, gated_1.gated)((0, key_route_1.keyRoutes)(ctx)), (0, gated_1.gated)((0, balance_route_1.balanceRoutes)(ctx)), (0, gated_1.gated)((0, keys_route_1.keysRoutes)(ctx)));
    app.use((0, gated_1.gated)((0, responses_route_1.responsesRoutes)(ctx)), (0, gated_1.gated)((0, chat_route_1.chatRoutes)(ctx)), (0, gated_1.gated)((0, embeddings_route_1.embeddingsRoutes)({ guard: ctx.guard, embeddings: ctx.embeddings })), (0, gated_1.gated)((0, typed_questions_route_1.typedQuestionsRoutes)({ guard: ctx.guard, questions: ctx.questions })), (0, gated_1.gated)((0, models_route_1.modelsRoutes)(ctx)));
    app.use((0, gated_1.gated)((0, storage_route_1.storageRoutes)(ctx)), (0, gated_1.gated)((0, files_route_1.filesRoutes)(ctx)));
    app.use((0, gated_1.gated)((0, history_route_1.historyRoutes)(ctx)));
    app.use((0, gated_1.gated)((0, images_route_1.imagesRoutes)({ guard: ctx.guard, images: ctx.images })), (0, gated_1.gated)((0, media_route_1.mediaRoutes)({ guard: ctx.guard, media: ctx.media, operations: ctx.mediaOperations })));
    app.use(error_handler_1.notFoundHandler);
    app.use((0, error_handler_1.errorHandler)(ctx.logger));
    return app;
}
