import { Router } from 'express';
import type { AppContext } from '../app-context';
import { check } from '../../shared/schemas/ajv';
import { activityQuerySchema, type ActivityQuery } from '../../shared/schemas/activity.schema';

/** GET /v1/activity (decisions.md section 8): OpenRouter's activity in our money, for keys, tokens and sessions. */
export function activityRoutes(ctx: AppContext): Router {
  const r = Router();
  r.get('/v1/activity', ...ctx.readGuard, async (req, res) => {
    const query = check<ActivityQuery>(activityQuerySchema, { ...req.query }, { query: true });
    res.json({ data: await ctx.activity.activity(res.locals.principal, query) });
  });
  return r;
}
