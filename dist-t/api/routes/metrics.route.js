"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.metricsRoutes = metricsRoutes;
const express_1 = require("express");
const app_error_1 = require("../../shared/errors/app-error");
const metrics_auth_1 = require("../../shared/metrics/metrics-auth");
/** GET /metrics: Prometheus text; open, or behind `Bearer $METRICS_TOKEN` when that is set (decisions.md section 1). */
function metricsRoutes(ctx) {
    const r = (0, express_1.Router)();
    r.get('/metrics', async (req, res) => {
        const token = ctx.config.metricsToken;
        if (token && !(0, metrics_auth_1.bearerMatches)(req.headers.authorization, token)) {
            throw new app_error_1.AppError('UNAUTHORIZED', 'GET /metrics needs "Authorization: Bearer <METRICS_TOKEN>"', { headers: { 'WWW-Authenticate': 'Bearer' } });
        }
        const body = await ctx.metrics.registry.metrics();
        res.setHeader('Content-Type', ctx.metrics.registry.contentType);
        res.setHeader('Cache-Control', 'no-store');
        res.send(body);
    });
    return r;
}
