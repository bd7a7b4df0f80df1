"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.balanceRoutes = balanceRoutes;
const express_1 = require("express");
const money_1 = require("../../shared/billing/money");
/** GET /v2/balance and the deprecated GET /v1/balance (decisions.md section 4). */
function balanceRoutes(ctx) {
    const r = (0, express_1.Router)();
    async function load(res) {
        const p = res.locals.principal;
        return ctx.keyInfo.balanceFor({ organizationId: p.organizationId, keyId: p.kind === 'key' ? p.keyId : null, userId: p.userId });
    }
    r.get('/v2/balance', ...ctx.guard, async (_req, res) => {
        res.json((await load(res)).v2);
    });
    r.get('/v1/balance', ...ctx.guard, async (_req, res) => {
        const b = await load(res);
        res.setHeader('Deprecation', 'true');
        res.setHeader('Link', '</v2/balance>; rel="successor-version"');
        const personal = b.memberRemaining !== null;
        res.json({
            amount: personal ? (0, money_1.moneyString)(b.memberRemaining) : (0, money_1.moneyString)(b.org.balance),
            available: (0, money_1.moneyString)(b.available),
            ...(personal ? {} : { reservedAmount: (0, money_1.moneyString)(b.org.reserved), spentAmount: (0, money_1.moneyString)(b.org.spent) }),
            updatedAt: b.org.updatedAt.toISOString(),
        });
    });
    return r;
}
