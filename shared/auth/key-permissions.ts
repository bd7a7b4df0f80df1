import { AppError } from '../errors/app-error';
import { money } from '../money';
import type { Role } from './tokens';

/**
 * Who may change which field of an API key (docs/key-permissions.md, decisions.md section 1). Owner and admin
 * change every field of every key of the organization; a member only its own keys, and never loosens a
 * restriction an owner or admin set (those fields are in the key's `lockedFields`). A revoked key is final:
 * nobody changes it.
 */
export const LOCKABLE_FIELDS = ['limit', 'allowed_models', 'rate_limit_per_minute', 'disabled'] as const;
export type LockableField = (typeof LOCKABLE_FIELDS)[number];

export interface KeyState {
  id: string;
  limit: { toString(): string } | null;
  limitReset: string | null;
  allowedModels: string[];
  rateLimitPerMinute: number | null;
  disabledAt: Date | null;
  revokedAt: Date | null;
  lockedFields: string[];
}

export interface KeyPatch {
  name?: string;
  limit?: number | string | null;
  limit_reset?: string | null;
  allowed_models?: string[];
  rate_limit_per_minute?: number | null;
  disabled?: boolean;
}

const refuse = (field: string, why: string) => new AppError('FORBIDDEN', `A member may not change ${field} of this key: ${why}`, { details: { errors: [{ path: `/${field}`, message: why }] } });

/**
 * Checks a PATCH against the table; throws 409 for a revoked key and 403 naming the first field a member may not
 * change. Returns the key's locked fields after the change (owner and admin lock what they set).
 */
export function authorizeKeyPatch(role: Role, key: KeyState, patch: KeyPatch): string[] {
  if (key.revokedAt) throw new AppError('CONFLICT', `Key ${key.id} is revoked: a revoked key is final and cannot be changed or enabled again`);
  const locked = new Set(key.lockedFields);
  if (role === 'owner' || role === 'admin') {
    if ('limit' in patch || 'limit_reset' in patch) locked.add('limit');
    if ('allowed_models' in patch) locked.add('allowed_models');
    if ('rate_limit_per_minute' in patch) locked.add('rate_limit_per_minute');
    if (patch.disabled === true) locked.add('disabled');
    if (patch.disabled === false) locked.delete('disabled');
    return [...locked];
  }

  const set = 'an owner or admin set it, and a member may only tighten it';
  if (patch.disabled === false && key.disabledAt && locked.has('disabled')) {
    throw refuse('disabled', 'an owner or admin disabled the key; only an owner or admin can enable it again');
  }
  if (locked.has('limit') && ('limit' in patch || 'limit_reset' in patch)) {
    if ('limit_reset' in patch && key.limit !== null && patch.limit_reset !== key.limitReset) {
      throw refuse('limit_reset', `${set} (changing the period would restart what it counts)`);
    }
    if ('limit' in patch) {
      if (patch.limit === null || patch.limit === undefined) throw refuse('limit', `${set} (removing it loosens it)`);
      if (key.limit !== null && money(patch.limit).greaterThan(money(key.limit.toString()))) throw refuse('limit', `${set} (a larger limit loosens it)`);
    }
  }
  if (locked.has('allowed_models') && patch.allowed_models !== undefined) {
    const models = patch.allowed_models;
    if (models.length === 0) throw refuse('allowed_models', `${set} (an empty list allows every model)`);
    if (key.allowedModels.length > 0 && !models.every((m) => key.allowedModels.includes(m))) {
      throw refuse('allowed_models', `${set} (only models already allowed may stay)`);
    }
  }
  if (locked.has('rate_limit_per_minute') && 'rate_limit_per_minute' in patch) {
    const next = patch.rate_limit_per_minute;
    const current = key.rateLimitPerMinute;
    const tighter = typeof next === 'number' && next > 0 && (current === 0 || (current !== null && next <= current));
    if (!tighter) throw refuse('rate_limit_per_minute', `${set} (only a smaller positive rate limit is tighter)`);
  }
  return [...locked];
}

/** The fields an owner or admin sets when creating a key: locked for its member. */
export function lockedOnCreate(role: Role, body: KeyPatch): string[] {
  if (role === 'member') return [];
  return LOCKABLE_FIELDS.filter((f) => f !== 'disabled' && (f === 'limit' ? 'limit' in body || 'limit_reset' in body : f in body));
}
