import { Router, type NextFunction, type Request, type Response } from 'express';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';
import { verifyToken } from '../../shared/auth/tokens';

export const DASHBOARD_PATH = '/admin/queues';
export const ADMIN_COOKIE = 'sy_admin';

/** The dashboard's own assets only: bull-board's page links Google Fonts, which an offline host would wait on. */
const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'";

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return decodeURIComponent(part.slice(i + 1).trim());
  }
  return undefined;
}

/**
 * The BullMQ dashboard (bull-board) at /admin/queues for every queue, only for personal-account tokens of role
 * owner or admin (decisions.md section 1): an API key or a member token 403, none 401. Browsers log in with
 * GET /admin/login?token=..., which sets an HttpOnly, SameSite=Strict cookie (SameSite also keeps other sites
 * from driving the dashboard's mutating API with it).
 */
export function dashboardRoutes(ctx: AppContext): Router {
  const r = Router();

  /** The owner/admin principal of `token`; 401 for a bad token, 403 for an API key or a member. */
  const admit = async (token: string | undefined) => {
    if (!token) throw new AppError('UNAUTHORIZED', 'The queue dashboard needs an owner or admin token: "Authorization: Bearer <token>" or GET /admin/login?token=...');
    const p = await ctx.auth.authenticate(`Bearer ${token}`);
    if (p.kind !== 'user') throw new AppError('FORBIDDEN', 'The queue dashboard needs a personal-account token, not an API key');
    if (p.role !== 'owner' && p.role !== 'admin') throw new AppError('FORBIDDEN', `Your role (${p.role}) may not open the queue dashboard`);
    return p;
  };

  r.get('/admin/login', async (req, res) => {
    const token = typeof req.query.token === 'string' ? req.query.token : undefined;
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    await admit(token);
    const claims = verifyToken(token!, ctx.secret);
    const maxAge = claims ? Math.max(0, claims.exp - Math.floor(ctx.clock().getTime() / 1000)) : 3600;
    res.setHeader(
      'Set-Cookie',
      `${ADMIN_COOKIE}=${encodeURIComponent(token!)}; Path=/admin; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${req.secure ? '; Secure' : ''}`,
    );
    res.redirect(302, `${DASHBOARD_PATH}/`);
  });

  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: Object.values(ctx.queues).map((q) => new BullMQAdapter(q)),
    // @bull-board/express pins its own copy of @bull-board/api (9.10.1 beside our 9.10.2): identical at runtime,
    // but TypeScript sees two declarations of the adapter classes.
    serverAdapter: serverAdapter as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'],
    options: { uiConfig: { boardTitle: 'Switchyard queues', hideDocsLink: true } },
  });

  const guard = async (req: Request, res: Response, next: NextFunction) => {
    // One label for the whole dashboard (pages, assets, its polling API) in the HTTP metrics.
    res.locals.metricsRoute = DASHBOARD_PATH;
    try {
      const header = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      res.locals.principal = await admit(header ?? cookieValue(req.headers.cookie, ADMIN_COOKIE));
      res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
      next();
    } catch (e) {
      next(e);
    }
  };
  r.use(DASHBOARD_PATH, guard, serverAdapter.getRouter());
  return r;
}
