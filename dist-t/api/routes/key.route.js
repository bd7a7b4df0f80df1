"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.keyRoutes = keyRoutes;
const express_1 = require("express");
const app_error_1 = require("../../shared/errors/app-error");
/** GET /v1/key: the calling key's info record. A personal-account token gets 400 (interface rule 1). */
function keyRoutes(ctx) {
    const r = (0, express_1.Router)();
    r.get('/v1/key', ...ctx.guard, async (_req, res) => {
        const p = res.locals.principal;
        if (p.kind !== 'key')
            throw new app_error_1.AppError('BAD_REQUEST', 'GET /v1/key works only with an API key, not a personal-account token');
        res.json(await ctx.keyInfo.keyInfoOf(p.keyId));
    });
    return r;
}
