"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.historyRoutes = historyRoutes;
const express_1 = require("express");
const app_error_1 = require("../../shared/errors/app-error");
const ajv_1 = require("../../shared/schemas/ajv");
const history_schema_1 = require("../../shared/schemas/history.schema");
/**
 * Generation history (interface.md, "GET /v1/history/generations"): an API key sees its own generations; a
 * personal-account token sees the organization's (owner, admin) or its own keys' and its own (member).
 */
function historyRoutes(ctx) {
    const r = (0, express_1.Router)();
    const history = ctx.history;
    const viewer = (res) => {
        const p = res.locals.principal;
        return p.kind === 'key'
            ? { kind: 'key', organizationId: p.organizationId, keyId: p.keyId }
            : { kind: 'user', organizationId: p.organizationId, userId: p.userId, role: p.role };
    };
    r.get('/v1/history/generations', ...ctx.guard, async (req, res) => {
        const q = (0, ajv_1.check)(history_schema_1.historyQuerySchema, { ...req.query }, { query: true });
        const v = viewer(res);
        if (v.kind === 'key') {
            const refused = ['apiKeyId', 'withoutApiKey'].filter((k) => q[k] !== undefined);
            if (refused.length) {
                throw app_error_1.AppError.validation(refused.map((k) => ({ path: `/${k}`, message: 'works only with a personal-account token, not an API key' })), `${refused.join(' and ')} work only with a personal-account token`);
            }
        }
        if (q.apiKeyId !== undefined && q.withoutApiKey) {
            throw app_error_1.AppError.validation([{ path: '/withoutApiKey', message: 'cannot be combined with apiKeyId' }]);
        }
        const page = await history.list(v, {
            page: q.page,
            limit: q.limit,
            ...(0, history_schema_1.historyPeriod)(q),
            requestType: q.requestType,
            status: q.status,
            apiKeyId: q.apiKeyId,
            withoutApiKey: q.withoutApiKey,
            sortBy: q.sortBy,
            sortOrder: q.sortOrder,
        });
        // Past EXACT_COUNT_LIMIT matches `total` is an estimate; the body keeps the interface's meta exactly.
        if (page.totalIsEstimate)
            res.setHeader('X-Total-Is-Estimate', 'true');
        res.json({ items: page.items, meta: page.meta });
    });
    r.get('/v1/history/generations/:id', ...ctx.guard, async (req, res) => {
        res.json(await history.get(viewer(res), String(req.params.id)));
    });
    return r;
}
