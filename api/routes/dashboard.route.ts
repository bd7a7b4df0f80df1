import { Router, type NextFunction, type Request, type Response } from 'express';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';
import { verifyOperatorToken } from '../../shared/auth/operator-tokens';
import { bearerToken } from '../middleware/auth';
import type { Queue } from 'bullmq';
import { waitingByClass } from '../../shared/queue/fairness';
import { queueClient } from '../../shared/queue/claims';

export const DASHBOARD_PATH = '/admin/queues';
export const ADMIN_COOKIE = 'sy_admin';

/** The dashboard's own assets only (OfflineExpressAdapter takes bull-board's Google Fonts link out of its page). */
const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'";

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return decodeURIComponent(part.slice(i + 1).trim());
  }
  return undefined;
}

/** A `<link>` to another origin (bull-board's page links Google Fonts: a request out, and a CSP error, per load). */
const EXTERNAL_LINK = /<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>\s*/gi;

type EntryRoute = Parameters<ExpressAdapter['setEntryRoute']>[0];

/**
 * bull-board's Express adapter, its page served without resources from other origins: the dashboard works in a
 * closed network and its page loads only what Switchyard serves (the system's fonts stand in for IBM Plex). The one
 * seam: the adapter's public `setEntryRoute`, rendering the page as bull-board's own handler does, then dropping
 * external `<link>`s. test/e2e/dashboard.browser.test.ts fails when a bull-board upgrade brings another one.
 */
class OfflineExpressAdapter extends ExpressAdapter {
  setEntryRoute(routeDef: EntryRoute): ExpressAdapter {
    const view = (_req: Request, res: Response, next: NextFunction) => {
      const { name, params } = routeDef.handler({ basePath: this.basePath, uiConfig: this.uiConfig });
      res.render(name, params, (err, html) => (err ? next(err) : res.send(html.replace(EXTERNAL_LINK, ''))));
    };
    this.app[routeDef.method](routeDef.route, view);
    return this;
  }
}

const WITHHELD = '[withheld: customer content]';
const WITHHELD_URL_PARTS = '[query, fragment and credentials withheld]';

/**
 * A URL (a callBackUrl, a callback job's url) shows where it goes: scheme, host and path. Its query string and
 * fragment (often a token) and any `user:pass@` are withheld.
 */
function withholdUrlSecrets(value: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return WITHHELD;
  }
  const hidden = url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '';
  return `${url.protocol}//${url.host}${url.pathname}${hidden ? ` ${WITHHELD_URL_PARTS}` : ''}`;
}

/**
 * Job data and return values keep the scalar fields of an object (ids, model, mode; a URL without its secrets);
 * nested values, and a bare string or array (an output text), are customer content and withheld.
 */
export function withholdContent(value: unknown): unknown {
  if (typeof value === 'string' || Array.isArray(value)) return WITHHELD;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, v !== null && typeof v === 'object' ? WITHHELD : typeof v === 'string' ? withholdUrlSecrets(v) : v]),
  );
}

/** A queue on the dashboard, its description the jobs waiting per class (fair queues), read with its counts. */
class FairQueueAdapter extends BullMQAdapter {
  private waiting = '';
  constructor(private readonly q: Queue, opts: ConstructorParameters<typeof BullMQAdapter>[1]) {
    super(q, opts);
  }
  override async getJobCounts() {
    const [counts, w] = await Promise.all([super.getJobCounts(), queueClient(this.q).then((c) => waitingByClass(c, this.q)).catch(() => null)]);
    this.waiting = w ? `waiting: ${w.interactive} interactive, ${w.background} background` : '';
    return counts;
  }
  override getDescription(): string {
    return this.waiting;
  }
}

/**
 * The BullMQ dashboard (bull-board) at /admin/queues shows every organization's jobs, so only an operator token
 * (`switchyard operator token issue`) opens it; organization tokens of every role and API keys 403, none 401
 * (decisions.md section 1, docs/operator.md). It is read-only (no pause, add, retry, clean or edit: every
 * request but GET/HEAD is refused, and bull-board's own read-only mode refuses its actions too), and job
 * payloads show ids and settings but not prompts or outputs. Browsers log in with GET /admin/login?token=...,
 * which sets an HttpOnly, SameSite=Strict cookie.
 */
export function dashboardRoutes(ctx: AppContext): Router {
  const r = Router();

  /** 401 for no or a bad credential, 403 for a valid customer credential (an organization token or an API key). */
  const admit = async (token: string | undefined) => {
    const how = 'use an operator token from `switchyard operator token issue`: "Authorization: Bearer <token>" or GET /admin/login?token=...';
    if (!token) throw new AppError('UNAUTHORIZED', `The queue dashboard needs an operator token: ${how}`);
    const claims = verifyOperatorToken(token, ctx.secret, ctx.clock().getTime());
    if (claims) return claims;
    let customer = false;
    try {
      await ctx.auth.authenticate(`Bearer ${token}`);
      customer = true;
    } catch (e) {
      if (e instanceof AppError && e.status === 403) customer = true;
    }
    if (customer) throw new AppError('FORBIDDEN', `The queue dashboard is for Switchyard operators; organization tokens and API keys may not open it (${how})`);
    throw new AppError('UNAUTHORIZED', `Invalid or expired operator token: ${how}`);
  };

  r.get('/admin/login', async (req, res) => {
    const token = typeof req.query.token === 'string' ? req.query.token : undefined;
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    const claims = await admit(token);
    const maxAge = Math.max(0, claims.exp - Math.floor(ctx.clock().getTime() / 1000));
    res.setHeader(
      'Set-Cookie',
      `${ADMIN_COOKIE}=${encodeURIComponent(token!)}; Path=/admin; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${req.secure ? '; Secure' : ''}`,
    );
    res.redirect(302, `${DASHBOARD_PATH}/`);
  });

  const serverAdapter = new OfflineExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: Object.values(ctx.queues).map((q) => {
      const adapter = new FairQueueAdapter(q, { readOnlyMode: true, allowRetries: false });
      adapter.setFormatter('data', withholdContent);
      adapter.setFormatter('returnValue', withholdContent);
      return adapter;
    }),
    // @bull-board/express pins its own copy of @bull-board/api (9.10.1 beside our 9.10.2): identical at runtime,
    // but TypeScript sees two declarations of the adapter classes.
    serverAdapter: serverAdapter as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'],
    options: { uiConfig: { boardTitle: 'Switchyard queues', hideDocsLink: true } },
  });

  const guard = async (req: Request, res: Response, next: NextFunction) => {
    // One label for the whole dashboard (pages, assets, its polling API) in the HTTP metrics.
    res.locals.metricsRoute = DASHBOARD_PATH;
    try {
      await admit(bearerToken(req.headers.authorization) ?? cookieValue(req.headers.cookie, ADMIN_COOKIE));
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new AppError('FORBIDDEN', 'The queue dashboard is read-only');
      res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
      next();
    } catch (e) {
      next(e);
    }
  };
  r.use(DASHBOARD_PATH, guard, serverAdapter.getRouter());
  return r;
}
