import http from 'node:http';
import type { Socket } from 'node:net';
import express, { type Express } from 'express';
import { buildContext, type AppContext, type AppDeps } from './app-context';
import { telemetryMiddleware } from './middleware/metrics';
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
import { gated } from './routes/route-helpers';
import { batchesRoutes } from './routes/batches.route';
import { consoleRoutes } from './routes/console.route';
import { authRoutes } from './routes/auth.route';
import { membersRoutes } from './routes/members.route';
import { activityRoutes } from './routes/activity.route';

/** The Express application, without listen(): supertest and main.ts both use it. */
export function createApp(deps: AppDeps): Express & { locals: { ctx: AppContext } } {
  const ctx = buildContext(deps);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // The client's address (req.ip) as the proxies named by TRUST_PROXY report it: the sign-in throttle counts by it.
  app.set('trust proxy', deps.config.trustProxy);
  app.locals.ctx = ctx;

  app.use(telemetryMiddleware(ctx.metrics, app, ctx.tracing));
  // Each router is entered only by the paths it serves (api/routes/gated.ts): a request skips the others unwalked.
  app.use(gated(healthRoutes(ctx)), gated(metricsRoutes(ctx)), gated(docsRoutes(ctx)), gated(dashboardRoutes(ctx)));
  // JSON bodies are parsed by ctx.guard, after authentication (api/middleware/reject-nul.ts).
  app.use(rejectNulCharacters);

  app.use(gated(keyRoutes(ctx)), gated(balanceRoutes(ctx)), gated(keysRoutes(ctx)), gated(authRoutes(ctx)), gated(membersRoutes(ctx)));
  app.use(
    gated(responsesRoutes(ctx)),
    gated(chatRoutes(ctx)),
    gated(embeddingsRoutes({ guard: ctx.guard, embeddings: ctx.embeddings })),
    gated(typedQuestionsRoutes({ guard: ctx.guard, questions: ctx.questions })),
    gated(modelsRoutes(ctx)),
  );
  // The batch routes first: they serve GET /v1/files/{id}/content for batch files and pass the others on.
  app.use(gated(batchesRoutes(ctx)), gated(storageRoutes(ctx)), gated(filesRoutes(ctx)));
  app.use(gated(historyRoutes(ctx)), gated(activityRoutes(ctx)));
  app.use(gated(imagesRoutes({ guard: ctx.guard, images: ctx.images })), gated(mediaRoutes({ guard: ctx.guard, media: ctx.media, operations: ctx.mediaOperations })));

  // The console (/console): a page for people, after every API route so that no API request walks it.
  app.use(gated(consoleRoutes()));

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.logger));
  return app as Express & { locals: { ctx: AppContext } };
}

/**
 * `http.createServer` options under which every request and response is born with the app's own prototypes
 * (`app.request`, `app.response`), so that Express's per-request `Object.setPrototypeOf(req, app.request)` finds the
 * prototype already set and changes nothing (expressjs/express#5998). An object whose prototype was changed after it
 * was made is kept, with all it references, through V8's young-generation collections: every request's objects (req,
 * res, the router's closures, the handlers' state) were promoted to the old generation, about 1.4 MB per scavenge at
 * concurrency 1, each scavenge 3-4 ms where a server without them takes 0.3-0.5 (bench/rounds/06-what-v8-kept.md).
 *
 * Node's constructors are called on the new object (they are plain functions): made with `Reflect.construct` instead,
 * the objects are kept through those collections all the same. Were they ever classes, the options are left out and
 * Express sets the prototypes itself, as before.
 */
export function serverOptionsFor(app: Pick<Express, 'request' | 'response'>): Pick<http.ServerOptions, 'IncomingMessage' | 'ServerResponse'> {
  const plainFunction = (f: unknown) => typeof f === 'function' && !Function.prototype.toString.call(f).startsWith('class');
  if (!plainFunction(http.IncomingMessage) || !plainFunction(http.ServerResponse)) return {};
  const NodeRequest = http.IncomingMessage as unknown as (this: unknown, socket: Socket) => void;
  const NodeResponse = http.ServerResponse as unknown as (this: unknown, req: http.IncomingMessage, options?: unknown) => void;
  function IncomingMessage(this: unknown, socket: Socket) {
    NodeRequest.call(this, socket);
  }
  IncomingMessage.prototype = app.request;
  function ServerResponse(this: unknown, req: http.IncomingMessage, options?: unknown) {
    NodeResponse.call(this, req, options);
  }
  ServerResponse.prototype = app.response;
  return { IncomingMessage: IncomingMessage as unknown as typeof http.IncomingMessage, ServerResponse: ServerResponse as unknown as typeof http.ServerResponse };
}
