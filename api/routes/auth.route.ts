import { Router, type Request, type Response } from 'express';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { loginSchema, redeemTokenSchema, type LoginBody, type RedeemTokenBody } from '../../shared/schemas/auth.schema';
import { jsonBody } from '../middleware/reject-nul';
import type { SignedIn, UserTokenKind } from '../../shared/services/sessions.service';

/** A sign-in body is small: a larger one is refused before it is parsed. */
const SIGN_IN_BODY_BYTES = 16 * 1024;

/**
 * Sign-in, invite and reset, the session and logout (decisions.md section 8). The three that start a session take no
 * credential; they refuse a foreign `Origin` (a page elsewhere must not sign a browser in to another account).
 */
export function authRoutes(ctx: AppContext): Router {
  const r = Router();
  const gate = ctx.sessionGate;
  const body = jsonBody(SIGN_IN_BODY_BYTES);

  const signedIn = (res: Response, started: { cookie: string; signedIn: SignedIn }) => {
    gate.setCookie(res, started.cookie);
    res.setHeader('Cache-Control', 'no-store');
    res.json(started.signedIn);
  };
  const fromThisOrigin = (req: Request, _res: Response, next: (e?: unknown) => void) => {
    try {
      gate.checkOrigin(req);
      next();
    } catch (e) {
      next(e);
    }
  };

  r.post('/v1/auth/login', fromThisOrigin, ...body, async (req, res) => {
    const input = check<LoginBody>(loginSchema, req.body ?? {});
    signedIn(res, await gate.sessions.login(input.email, input.password, req.ip ?? req.socket.remoteAddress ?? 'unknown'));
  });

  const redeem = (kind: UserTokenKind) => async (req: Request, res: Response) => {
    const input = check<RedeemTokenBody>(redeemTokenSchema, req.body ?? {});
    signedIn(res, await gate.sessions.redeem(kind, input.token, input.password));
  };
  r.post('/v1/auth/invite', fromThisOrigin, ...body, redeem('invite'));
  r.post('/v1/auth/reset', fromThisOrigin, ...body, redeem('reset'));

  r.get('/v1/auth/session', ...ctx.guard, (_req, res) => {
    const session = res.locals.session;
    if (!session) throw new AppError('UNAUTHORIZED', 'No session: this request was not signed in by the session cookie');
    res.setHeader('Cache-Control', 'no-store');
    res.json(session.signedIn);
  });

  r.post('/v1/auth/logout', ...ctx.guard, async (_req, res) => {
    const session = res.locals.session;
    if (session) await gate.sessions.end(session.cookie);
    gate.clearCookie(res);
    res.status(204).end();
  });
  return r;
}
