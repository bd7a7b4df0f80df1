"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.modelsRoutes = modelsRoutes;
const express_1 = require("express");
const app_error_1 = require("../../shared/errors/app-error");
const CREATED = 1_767_225_600; // 2026-01-01: catalog entries carry no date of their own
/** GET /v1/models (and /v1/models/{id}) in OpenAI's shape, with our catalog details alongside. */
function modelsRoutes(ctx) {
    const r = (0, express_1.Router)();
    const view = (m) => ({
        id: m.id,
        object: 'model',
        created: CREATED,
        owned_by: m.id.split('/')[0],
        name: m.displayName,
        type: m.type,
        endpoints: m.endpoints.map((e) => ({ provider: e.provider, pricing: e.price, supports: e.supports, context_length: e.contextLength ?? null, region: ctx.catalog.providers[e.provider]?.region ?? null })),
    });
    r.get('/v1/models', ...ctx.guard, (_req, res) => {
        res.json({ object: 'list', data: Object.values(ctx.catalog.models).map(view) });
    });
    // Model ids contain slashes (`openai/gpt-4.1-mini`): the id is the rest of the path.
    r.get('/v1/models/*id', ...ctx.guard, (req, res) => {
        const raw = req.params.id;
        const id = Array.isArray(raw) ? raw.join('/') : String(raw);
        const m = Object.hasOwn(ctx.catalog.models, id) ? ctx.catalog.models[id] : undefined;
        if (!m)
            throw new app_error_1.AppError('NOT_FOUND', `Model ${id} not found`, { metadata: { reason: 'model_not_found' } });
        res.json(view(m));
    });
    return r;
}
