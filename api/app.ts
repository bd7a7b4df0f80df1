import express, { type Express } from 'express';
import { buildContext, type AppContext, type AppDeps } from './app-context';
import { traceMiddleware } from './middleware/trace';
import { metricsMiddleware } from './middleware/metrics';
import { metricsRoutes } from './routes/metrics.route';
import { docsRoutes } from './routes/docs.route';
import { dashboardRoutes } from './routes/dashboard.route';
import { errorHandler, notFoundHandler } from './middleware/error-handler';
import { rejectNulCharacters } from './middleware/reject-nul';
import { healthRoutes } from './routes/health.route';
import { keyRoutes } from './routes/key.route';
import { balanceRoutes } from './routes/balance.route';
import { keysRoutes } from './routes/keys.route';
import { responsesRoutes } from './routes/responses.route';
import { chatRoutes } from './routes/chat.route';
import { embeddingsRoutes } from './routes/embeddings.route';
import { typedQuestionsRoutes } from './routes/typed-questions.route';
import { modelsRoutes } from './routes/models.route';
import { storageRoutes } from './routes/storage.route';
import { filesRoutes } from './routes/files.route';
import { historyRoutes } from './routes/history.route';
import { imagesRoutes } from './routes/images.route';
import { mediaRoutes } from './routes/media.route';

/** The Express application, without listen(): supertest and main.ts both use it. */
export function createApp(deps: AppDeps): Express & { locals: { ctx: AppContext } } {
  const ctx = buildContext(deps);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.locals.ctx = ctx;

  app.use(traceMiddleware);
  app.use(metricsMiddleware(ctx.metrics));
  app.use(healthRoutes(ctx), metricsRoutes(ctx), docsRoutes(ctx), dashboardRoutes(ctx));
  // JSON bodies are parsed by ctx.guard, after authentication (api/middleware/reject-nul.ts).
  app.use(rejectNulCharacters);

  app.use(keyRoutes(ctx), balanceRoutes(ctx), keysRoutes(ctx));
  app.use(responsesRoutes(ctx), chatRoutes(ctx), embeddingsRoutes({ guard: ctx.guard, embeddings: ctx.embeddings }), typedQuestionsRoutes({ guard: ctx.guard, questions: ctx.questions }), modelsRoutes(ctx));
  app.use(storageRoutes(ctx), filesRoutes(ctx));
  app.use(historyRoutes(ctx));
  app.use(imagesRoutes({ guard: ctx.guard, images: ctx.images }), mediaRoutes({ guard: ctx.guard, media: ctx.media, operations: ctx.mediaOperations }));

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.logger));
  return app as Express & { locals: { ctx: AppContext } };
}
