"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.keysRoutes = keysRoutes;
const express_1 = require("express");
const auth_1 = require("../middleware/auth");
const app_error_1 = require("../../shared/errors/app-error");
const ajv_1 = require("../../shared/schemas/ajv");
const keys_schema_1 = require("../../shared/schemas/keys.schema");
const money_1 = require("../../shared/billing/money");
const key_info_service_1 = require("../../shared/services/key-info.service");
const key_permissions_1 = require("../../shared/auth/key-permissions");
/**
 * Key management for personal-account tokens: owner and admin manage every key of the organization,
 * a member only its own keys and never loosens what an owner or admin set; a revoked key is final; API keys get
 * 403 (decisions.md section 1, docs/key-permissions.md).
 */
function keysRoutes(ctx) {
    const r = (0, express_1.Router)();
    const view = (k) => ({
        id: k.id,
        name: k.name,
        label: k.label,
        user_id: k.userId,
        creator_user_id: k.creatorUserId,
        limit: k.limit === null ? null : (0, money_1.moneyNumber)(k.limit),
        limit_remaining: k.limit === null ? null : (0, money_1.moneyNumber)((0, key_info_service_1.limitRemaining)(k, ctx.clock())),
        limit_reset: k.limit === null ? null : k.limitReset,
        usage: (0, money_1.moneyNumber)(k.usage),
        allowed_models: k.allowedModels,
        rate_limit_per_minute: k.rateLimitPerMinute,
        disabled: k.disabledAt !== null,
        disabled_at: k.disabledAt?.toISOString() ?? null,
        revoked: k.revokedAt !== null,
        revoked_at: k.revokedAt?.toISOString() ?? null,
        locked_fields: k.lockedFields,
        created_at: k.createdAt.toISOString(),
        updated_at: k.updatedAt.toISOString(),
    });
    /** The key, if the caller may manage it; 404 otherwise (other organizations' keys do not exist for you). */
    async function manageable(res, id) {
        const user = (0, auth_1.requireUser)(res);
        const key = await ctx.accounts.findKey(id);
        if (!key || key.organizationId !== user.organizationId)
            throw new app_error_1.AppError('NOT_FOUND', `Key ${id} not found`);
        if (user.role === 'member' && key.userId !== user.userId)
            throw new app_error_1.AppError('FORBIDDEN', 'A member may manage only its own keys');
        return key;
    }
    r.post('/v1/keys', ...ctx.guard, async (req, res) => {
        const user = (0, auth_1.requireUser)(res);
        const body = (0, ajv_1.check)(keys_schema_1.createKeySchema, req.body ?? {});
        if (body.user_id && user.role === 'member' && body.user_id !== user.userId)
            throw new app_error_1.AppError('FORBIDDEN', 'A member may create keys only for itself');
        const created = await ctx.accounts.createKey({
            organizationId: user.organizationId,
            userId: body.user_id ?? user.userId,
            creatorUserId: user.userId,
            name: body.name,
            limit: body.limit,
            reset: body.limit_reset,
            allowedModels: body.allowed_models,
            rateLimitPerMinute: body.rate_limit_per_minute,
            lockedFields: (0, key_permissions_1.lockedOnCreate)(user.role, body),
        });
        res.status(201).json({ ...view(created.record), key: created.key });
    });
    r.get('/v1/keys', ...ctx.guard, async (_req, res) => {
        const user = (0, auth_1.requireUser)(res);
        const keys = await ctx.accounts.listKeys(user.organizationId, user.role === 'member' ? user.userId : undefined);
        res.json({ data: keys.map(view) });
    });
    r.patch('/v1/keys/:id', ...ctx.guard, async (req, res) => {
        const key = await manageable(res, String(req.params.id));
        const body = (0, ajv_1.check)(keys_schema_1.updateKeySchema, req.body ?? {});
        const lockedFields = (0, key_permissions_1.authorizeKeyPatch)((0, auth_1.requireUser)(res).role, key, body);
        const updated = await ctx.accounts.updateKey(key.id, {
            name: body.name,
            allowedModels: body.allowed_models,
            rateLimitPerMinute: body.rate_limit_per_minute,
            disabled: body.disabled,
            lockedFields,
            ...('limit' in body ? { limit: body.limit, reset: body.limit_reset ?? (body.limit === null ? null : key.limitReset ?? 'never') } : {}),
            ...(!('limit' in body) && body.limit_reset !== undefined ? { reset: body.limit_reset } : {}),
        });
        ctx.auth.forget(key.id);
        res.json(view(updated));
    });
    r.delete('/v1/keys/:id', ...ctx.guard, async (req, res) => {
        const key = await manageable(res, String(req.params.id));
        await ctx.accounts.revokeKey(key.id);
        ctx.auth.forget(key.id);
        res.json({ id: key.id, revoked: true, deleted: true });
    });
    return r;
}
