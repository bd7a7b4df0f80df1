"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ADMIN_COOKIE = exports.DASHBOARD_PATH = void 0;
exports.withholdContent = withholdContent;
exports.dashboardRoutes = dashboardRoutes;
const express_1 = require("express");
const api_1 = require("@bull-board/api");
const bullMQAdapter_1 = require("@bull-board/api/bullMQAdapter");
const express_2 = require("@bull-board/express");
const app_error_1 = require("../../shared/errors/app-error");
const operator_tokens_1 = require("../../shared/auth/operator-tokens");
const auth_1 = require("../middleware/auth");
exports.DASHBOARD_PATH = '/admin/queues';
exports.ADMIN_COOKIE = 'sy_admin';
/** The dashboard's own assets only: bull-board's page links Google Fonts, which an offline host would wait on. */
const DASHBOARD_CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'";
function cookieValue(header, name) {
    for (const part of (header ?? '').split(';')) {
        const i = part.indexOf('=');
        if (i > 0 && part.slice(0, i).trim() === name)
            return decodeURIComponent(part.slice(i + 1).trim());
    }
    return undefined;
}
const WITHHELD = '[withheld: customer content]';
/**
 * Job data and return values keep the scalar fields of an object (ids, model, mode); nested values, and a bare
 * string or array (an output text), are customer content and withheld.
 */
function withholdContent(value) {
    if (typeof value === 'string' || Array.isArray(value))
        return WITHHELD;
    if (value === null || typeof value !== 'object')
        return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, v !== null && typeof v === 'object' ? WITHHELD : v]));
}
/**
 * The BullMQ dashboard (bull-board) at /admin/queues shows every organization's jobs, so only an operator token
 * (`switchyard operator token issue`) opens it; organization tokens of every role and API keys 403, none 401
 * (decisions.md section 1, docs/operator.md). It is read-only (no pause, add, retry, clean or edit: every
 * request but GET/HEAD is refused, and bull-board's own read-only mode refuses its actions too), and job
 * payloads show ids and settings but not prompts or outputs. Browsers log in with GET /admin/login?token=...,
 * which sets an HttpOnly, SameSite=Strict cookie.
 */
function dashboardRoutes(ctx) {
    const r = (0, express_1.Router)();
    /** 401 for no or a bad credential, 403 for a valid customer credential (an organization token or an API key). */
    const admit = async (token) => {
        const how = 'use an operator token from `switchyard operator token issue`: "Authorization: Bearer <token>" or GET /admin/login?token=...';
        if (!token)
            throw new app_error_1.AppError('UNAUTHORIZED', `The queue dashboard needs an operator token: ${how}`);
        const claims = (0, operator_tokens_1.verifyOperatorToken)(token, ctx.secret, ctx.clock().getTime());
        if (claims)
            return claims;
        let customer = false;
        try {
            await ctx.auth.authenticate(`Bearer ${token}`);
            customer = true;
        }
        catch (e) {
            if (e instanceof app_error_1.AppError && e.status === 403)
                customer = true;
        }
        if (customer)
            throw new app_error_1.AppError('FORBIDDEN', `The queue dashboard is for Switchyard operators; organization tokens and API keys may not open it (${how})`);
        throw new app_error_1.AppError('UNAUTHORIZED', `Invalid or expired operator token: ${how}`);
    };
    r.get('/admin/login', async (req, res) => {
        const token = typeof req.query.token === 'string' ? req.query.token : undefined;
        res.setHeader('Cache-Control', 'no-store');
        res.setHeader('Referrer-Policy', 'no-referrer');
        const claims = await admit(token);
        const maxAge = Math.max(0, claims.exp - Math.floor(ctx.clock().getTime() / 1000));
        res.setHeader('Set-Cookie', `${exports.ADMIN_COOKIE}=${encodeURIComponent(token)}; Path=/admin; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${req.secure ? '; Secure' : ''}`);
        res.redirect(302, `${exports.DASHBOARD_PATH}/`);
    });
    const serverAdapter = new express_2.ExpressAdapter();
    serverAdapter.setBasePath(exports.DASHBOARD_PATH);
    (0, api_1.createBullBoard)({
        queues: Object.values(ctx.queues).map((q) => {
            const adapter = new bullMQAdapter_1.BullMQAdapter(q, { readOnlyMode: true, allowRetries: false });
            adapter.setFormatter('data', withholdContent);
            adapter.setFormatter('returnValue', withholdContent);
            return adapter;
        }),
        // @bull-board/express pins its own copy of @bull-board/api (9.10.1 beside our 9.10.2): identical at runtime,
        // but TypeScript sees two declarations of the adapter classes.
        serverAdapter: serverAdapter,
        options: { uiConfig: { boardTitle: 'Switchyard queues', hideDocsLink: true } },
    });
    const guard = async (req, res, next) => {
        // One label for the whole dashboard (pages, assets, its polling API) in the HTTP metrics.
        res.locals.metricsRoute = exports.DASHBOARD_PATH;
        try {
            await admit((0, auth_1.bearerToken)(req.headers.authorization) ?? cookieValue(req.headers.cookie, exports.ADMIN_COOKIE));
            if (req.method !== 'GET' && req.method !== 'HEAD')
                throw new app_error_1.AppError('FORBIDDEN', 'The queue dashboard is read-only');
            res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
            next();
        }
        catch (e) {
            next(e);
        }
    };
    r.use(exports.DASHBOARD_PATH, guard, serverAdapter.getRouter());
    return r;
}
