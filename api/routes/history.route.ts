import { Router, type Response } from 'express';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { historyPeriod, historyQuerySchema, type HistoryQuery } from '../../shared/schemas/history.schema';
import type { HistoryViewer } from '../../shared/services/history.service';

/**
 * Generation history (interface.md, "GET /v1/history/generations"): an API key sees its own generations; a
 * personal-account token sees the organization's (owner, admin) or its own keys' and its own (member).
 */
export function historyRoutes(ctx: AppContext): Router {
  const r = Router();
  const history = ctx.history;

  const viewer = (res: Response): HistoryViewer => {
    const p = res.locals.principal;
    return p.kind === 'key'
      ? { kind: 'key', organizationId: p.organizationId, keyId: p.keyId }
      : { kind: 'user', organizationId: p.organizationId, userId: p.userId, role: p.role };
  };

  r.get('/v1/history/generations', ...ctx.readGuard, async (req, res) => {
    const q = check<HistoryQuery>(historyQuerySchema, { ...(req.query as Record<string, unknown>) }, { query: true });
    const v = viewer(res);
    if (v.kind === 'key') {
      const refused = (['apiKeyId', 'withoutApiKey'] as const).filter((k) => q[k] !== undefined);
      if (refused.length) {
        throw AppError.validation(
          refused.map((k) => ({ path: `/${k}`, message: 'works only with a personal-account token, not an API key' })),
          `${refused.join(' and ')} work only with a personal-account token`,
        );
      }
    }
    if (q.apiKeyId !== undefined && q.withoutApiKey) {
      throw AppError.validation([{ path: '/withoutApiKey', message: 'cannot be combined with apiKeyId' }]);
    }
    const page = await history.list(v, {
      page: q.page,
      limit: q.limit,
      ...historyPeriod(q),
      requestType: q.requestType,
      status: q.status,
      apiKeyId: q.apiKeyId,
      withoutApiKey: q.withoutApiKey,
      sortBy: q.sortBy,
      sortOrder: q.sortOrder,
    });
    // Past EXACT_COUNT_LIMIT matches `total` is an estimate; the body keeps the interface's meta exactly.
    if (page.totalIsEstimate) res.setHeader('X-Total-Is-Estimate', 'true');
    res.json({ items: page.items, meta: page.meta });
  });

  r.get('/v1/history/generations/:id', ...ctx.readGuard, async (req, res) => {
    res.json(await history.get(viewer(res), String(req.params.id)));
  });
  return r;
}
