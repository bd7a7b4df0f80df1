import { Router, type Response } from 'express';
import type { AppContext } from '../app-context';
import { requireUser } from '../middleware/auth';
import { AppError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { createKeySchema, updateKeySchema, type CreateKeyBody, type UpdateKeyBody } from '../../shared/schemas/keys.schema';
import { moneyNumber } from '../../shared/money';
import { limitRemaining } from '../../shared/services/key-info.service';
import { authorizeKeyPatch, lockedOnCreate } from '../../shared/auth/key-permissions';
import type { ApiKey } from '../../shared/services/accounts.service';

/**
 * Key management for personal-account tokens: owner and admin manage every key of the organization,
 * a member only its own keys and never loosens what an owner or admin set; a revoked key is final; API keys get
 * 403 (decisions.md section 1, docs/key-permissions.md).
 */
export function keysRoutes(ctx: AppContext): Router {
  const r = Router();

  const view = (k: ApiKey) => ({
    id: k.id,
    name: k.name,
    label: k.label,
    user_id: k.userId,
    creator_user_id: k.creatorUserId,
    limit: k.limit === null ? null : moneyNumber(k.limit),
    limit_remaining: k.limit === null ? null : moneyNumber(limitRemaining(k, ctx.clock())!),
    limit_reset: k.limit === null ? null : k.limitReset,
    usage: moneyNumber(k.usage),
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
  async function manageable(res: Response, id: string): Promise<ApiKey> {
    const user = requireUser(res);
    const key = await ctx.accounts.findKey(id);
    if (!key || key.organizationId !== user.organizationId) throw new AppError('NOT_FOUND', `Key ${id} not found`);
    if (user.role === 'member' && key.userId !== user.userId) throw new AppError('FORBIDDEN', 'A member may manage only its own keys');
    return key;
  }

  r.post('/v1/keys', ...ctx.guard, async (req, res) => {
    const user = requireUser(res);
    const body = check<CreateKeyBody>(createKeySchema, req.body ?? {});
    if (body.user_id && user.role === 'member' && body.user_id !== user.userId) throw new AppError('FORBIDDEN', 'A member may create keys only for itself');
    const created = await ctx.accounts.createKey({
      organizationId: user.organizationId,
      userId: body.user_id ?? user.userId,
      creatorUserId: user.userId,
      name: body.name,
      limit: body.limit,
      reset: body.limit_reset,
      allowedModels: body.allowed_models,
      rateLimitPerMinute: body.rate_limit_per_minute,
      lockedFields: lockedOnCreate(user.role, body),
    });
    res.status(201).json({ ...view(created.record), key: created.key });
  });

  r.get('/v1/keys', ...ctx.readGuard, async (_req, res) => {
    const user = requireUser(res);
    const keys = await ctx.accounts.listKeys(user.organizationId, user.role === 'member' ? user.userId : undefined);
    res.json({ data: (await ctx.keyInfo.unleased('api_key_id', keys)).map(view) });
  });

  r.patch('/v1/keys/:id', ...ctx.guard, async (req, res) => {
    const key = await manageable(res, String(req.params.id));
    const body = check<UpdateKeyBody>(updateKeySchema, req.body ?? {});
    const lockedFields = authorizeKeyPatch(requireUser(res).role, key, body);
    const updated = await ctx.accounts.updateKey(key.id, {
      name: body.name,
      allowedModels: body.allowed_models,
      rateLimitPerMinute: body.rate_limit_per_minute,
      disabled: body.disabled,
      lockedFields,
      ...('limit' in body ? { limit: body.limit, reset: body.limit_reset ?? (body.limit === null ? null : key.limitReset ?? 'never') } : {}),
      ...(!('limit' in body) && body.limit_reset !== undefined ? { reset: body.limit_reset } : {}),
    });
    res.json(view((await ctx.keyInfo.unleased('api_key_id', [updated]))[0]));
  });

  r.delete('/v1/keys/:id', ...ctx.guard, async (req, res) => {
    const key = await manageable(res, String(req.params.id));
    await ctx.accounts.revokeKey(key.id);
    res.json({ id: key.id, revoked: true, deleted: true });
  });
  return r;
}
