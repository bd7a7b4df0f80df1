import { Router } from 'express';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';

/** GET /v1/key: the calling key's info record. A personal-account token gets 400 (interface rule 1). */
export function keyRoutes(ctx: AppContext): Router {
  const r = Router();
  r.get('/v1/key', ...ctx.readGuard, async (_req, res) => {
    const p = res.locals.principal;
    if (p.kind !== 'key') throw new AppError('BAD_REQUEST', 'GET /v1/key works only with an API key, not a personal-account token');
    res.json(await ctx.keyInfo.keyInfoOf(p.keyId));
  });
  return r;
}
