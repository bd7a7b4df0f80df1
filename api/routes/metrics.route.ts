import { Router } from 'express';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';
import { bearerMatches } from '../../shared/metrics/metrics-auth';

/** GET /metrics: Prometheus text; open, or behind `Bearer $METRICS_TOKEN` when that is set (decisions.md section 1). */
export function metricsRoutes(ctx: AppContext): Router {
  const r = Router();
  r.get('/metrics', async (req, res) => {
    const token = ctx.config.metricsToken;
    if (token && !bearerMatches(req.headers.authorization, token)) {
      throw new AppError('UNAUTHORIZED', 'GET /metrics needs "Authorization: Bearer <METRICS_TOKEN>"', { headers: { 'WWW-Authenticate': 'Bearer' } });
    }
    const body = await ctx.metrics.scrape();
    res.setHeader('Content-Type', ctx.metrics.registry.contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.send(body);
  });
  return r;
}
