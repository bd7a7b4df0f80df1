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
import { gated } from './routes/gated';

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
  // Each router is entered only by the paths it serves (api/routes/gated.ts): a request skips the others unwalked.
  app.use(gated(healthRoutes(ctx)), gated(metricsRoutes(ctx)), gated(docsRoutes(ctx)), gated(dashboardRoutes(ctx)));
  // JSON bodies are parsed by ctx.guard, after authentication (api/middleware/reject-nul.ts).
  app.use(rejectNulCharacters);

  app.use(gated(keyRoutes(ctx)), gated(balanceRoutes(ctx)), gated(keysRoutes(ctx)));
  app.use(
    gated(responsesRoutes(ctx)),
    gated(chatRoutes(ctx)),
    gated(embeddingsRoutes({ guard: ctx.guard, embeddings: ctx.embeddings })),
    gated(typedQuestionsRoutes({ guard: ctx.guard, questions: ctx.questions })),
    gated(modelsRoutes(ctx)),
  );
  app.use(gated(storageRoutes(ctx)), gated(filesRoutes(ctx)));
  app.use(gated(historyRoutes(ctx)));
  app.use(gated(imagesRoutes({ guard: ctx.guard, images: ctx.images })), gated(mediaRoutes({ guard: ctx.guard, media: ctx.media, operations: ctx.mediaOperations })));

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.logger));
  return app as Express & { locals: { ctx: AppContext } };
}
