import express, { type Express } from 'express';
import { buildContext, type AppContext, type AppDeps } from './app-context';
import { traceMiddleware } from './middleware/trace';
import { errorHandler, notFoundHandler } from './middleware/error-handler';
import { healthRoutes } from './routes/health.route';
import { keyRoutes } from './routes/key.route';
import { balanceRoutes } from './routes/balance.route';
import { keysRoutes } from './routes/keys.route';

/** The Express application, without listen(): supertest and main.ts both use it. */
export function createApp(deps: AppDeps): Express & { locals: { ctx: AppContext } } {
  const ctx = buildContext(deps);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.locals.ctx = ctx;

  app.use(traceMiddleware);
  app.use(healthRoutes(ctx));
  app.use(express.json({ limit: ctx.config.maxBodyBytes, type: ['application/json', 'application/*+json'] }));

  app.use(keyRoutes(ctx), balanceRoutes(ctx), keysRoutes(ctx));

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.logger));
  return app as Express & { locals: { ctx: AppContext } };
}
