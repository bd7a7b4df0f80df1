import { Router, type Response } from 'express';
import type { AppContext } from '../app-context';
import { moneyString } from '../../shared/money';

/** GET /v2/balance and the deprecated GET /v1/balance (decisions.md section 4). */
export function balanceRoutes(ctx: AppContext): Router {
  const r = Router();

  async function load(res: Response) {
    const p = res.locals.principal;
    return ctx.keyInfo.balanceFor({ organizationId: p.organizationId, keyId: p.kind === 'key' ? p.keyId : null, userId: p.userId });
  }

  r.get('/v2/balance', ...ctx.readGuard, async (_req, res) => {
    res.json((await load(res)).v2);
  });

  r.get('/v1/balance', ...ctx.readGuard, async (_req, res) => {
    const b = await load(res);
    res.setHeader('Deprecation', 'true');
    res.setHeader('Link', '</v2/balance>; rel="successor-version"');
    const personal = b.memberRemaining !== null;
    res.json({
      amount: personal ? moneyString(b.memberRemaining!) : moneyString(b.org.balance),
      available: moneyString(b.available),
      ...(personal ? {} : { reservedAmount: moneyString(b.org.reserved), spentAmount: moneyString(b.org.spent) }),
      updatedAt: b.org.updatedAt.toISOString(),
    });
  });
  return r;
}
