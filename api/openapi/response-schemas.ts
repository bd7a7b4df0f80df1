/**
 * Response schemas for the OpenAPI document, where we describe replies precisely. Request schemas are NOT
 * here: they are the ajv schemas of `shared/schemas/*.schema.ts`, used as they are. `$id` names the component.
 */
import { ERROR_CODES, ERROR_REASONS } from '../../shared/errors/error-codes';

const money = { type: 'string', pattern: '^-?\\d+(\\.\\d+)?$', description: 'Exact decimal amount in RUB' } as const;
const limitReset = { enum: ['daily', 'weekly', 'monthly', 'never', null] } as const;

/** Every non-2xx body (decisions.md section 3). */
export const errorResponseSchema = {
  $id: 'ErrorResponse',
  type: 'object',
  required: ['error', 'trace_id'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'type', 'param', 'trace_id'],
      properties: {
        code: { enum: Object.keys(ERROR_CODES) },
        message: { type: 'string', description: 'A validation message names the first failing field' },
        type: { enum: [...new Set(Object.values(ERROR_CODES).map((c) => c.type))], description: "OpenAI's error type of the code (the SDKs' err.type)" },
        param: { type: ['string', 'null'], description: "The first failing field in OpenAI's notation (messages[0].content), or null (the SDKs' err.param)" },
        trace_id: { type: 'string', description: 'Also in the X-Trace-Id and X-Request-Id response headers' },
        details: {
          type: 'object',
          description: '4xx only; validation issues from the request schema',
          properties: {
            errors: { type: 'array', items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } } },
          },
        },
        metadata: {
          type: 'object',
          properties: {
            reason: { enum: [...ERROR_REASONS] },
            attempts: { type: 'array', items: { type: 'object', properties: { provider: { type: 'string' }, reason: { type: 'string' } } } },
            candidates: { type: 'array' },
          },
        },
      },
    },
    trace_id: { type: 'string' },
  },
} as const;

export const healthSchema = {
  $id: 'Health',
  type: 'object',
  required: ['status'],
  properties: { status: { const: 'ok' } },
} as const;

export const readinessSchema = {
  $id: 'Readiness',
  type: 'object',
  required: ['status', 'checks'],
  properties: {
    status: { enum: ['ready', 'unavailable'] },
    checks: { type: 'object', properties: { database: { type: 'boolean' }, redis: { type: 'boolean' }, workers: { type: 'boolean' } } },
  },
} as const;

export const keyInfoSchema = {
  $id: 'KeyInfo',
  type: 'object',
  required: ['creator_user_id', 'label', 'limit', 'limit_remaining', 'limit_reset', 'usage', 'usage_daily', 'usage_weekly', 'usage_monthly'],
  properties: {
    creator_user_id: { type: ['string', 'null'] },
    label: { type: 'string', description: 'Masked key, `sy_...` plus its last 6 characters' },
    limit: { type: ['number', 'null'] },
    limit_remaining: { type: ['number', 'null'] },
    limit_reset: limitReset,
    usage: { type: 'number' },
    usage_daily: { type: 'number' },
    usage_weekly: { type: 'number' },
    usage_monthly: { type: 'number' },
  },
} as const;

export const balanceV1Schema = {
  $id: 'BalanceV1',
  type: 'object',
  required: ['amount', 'available', 'updatedAt'],
  properties: {
    amount: money,
    available: money,
    reservedAmount: { ...money, description: 'Omitted when the member has a personal limit' },
    spentAmount: { ...money, description: 'Omitted when the member has a personal limit' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;

const limitState = {
  type: ['object', 'null'],
  properties: { limit: { type: ['string', 'null'] }, limitRemaining: { type: ['string', 'null'] }, limitReset: limitReset },
} as const;

export const balanceV2Schema = {
  $id: 'BalanceV2',
  type: 'object',
  required: ['amount', 'available', 'reserved', 'spent', 'currency', 'updatedAt', 'key', 'member'],
  properties: {
    amount: money,
    available: money,
    reserved: money,
    spent: money,
    currency: { const: 'RUB' },
    updatedAt: { type: 'string', format: 'date-time' },
    key: limitState,
    member: limitState,
  },
} as const;

export const apiKeyRecordSchema = {
  $id: 'ApiKeyRecord',
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: ['string', 'null'] },
    label: { type: 'string' },
    key: { type: 'string', description: 'The secret key: only in the reply to POST /v1/keys, shown once' },
    user_id: { type: ['string', 'null'] },
    creator_user_id: { type: ['string', 'null'] },
    limit: { type: ['number', 'null'] },
    limit_remaining: { type: ['number', 'null'] },
    limit_reset: limitReset,
    usage: { type: 'number' },
    allowed_models: { type: 'array', items: { type: 'string' } },
    rate_limit_per_minute: { type: ['integer', 'null'] },
    disabled: { type: 'boolean', description: 'Disabled keys do not authenticate until enabled again (reversible)' },
    disabled_at: { type: ['string', 'null'], format: 'date-time' },
    revoked: { type: 'boolean', description: 'Revoked keys never authenticate again (final)' },
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
    locked_fields: { type: 'array', items: { type: 'string' }, description: "Restrictions an owner or admin set: the key's member may only tighten them" },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
} as const;

export const apiKeyListSchema = {
  $id: 'ApiKeyList',
  type: 'object',
  required: ['data'],
  properties: { data: { type: 'array', items: apiKeyRecordSchema } },
} as const;

export const revokedKeySchema = {
  $id: 'RevokedKey',
  type: 'object',
  required: ['id', 'revoked'],
  properties: { id: { type: 'string' }, revoked: { const: true }, deleted: { const: true } },
} as const;

/** What sign-in, invite, reset and GET /v1/auth/session answer (decisions.md section 8). */
export const signedInSchema = {
  $id: 'SignedIn',
  type: 'object',
  required: ['user', 'organization', 'csrfToken'],
  properties: {
    user: {
      type: 'object',
      required: ['id', 'email', 'role'],
      properties: { id: { type: 'string' }, email: { type: 'string' }, role: { enum: ['owner', 'admin', 'member'] } },
    },
    organization: { type: 'object', required: ['id', 'name'], properties: { id: { type: 'string' }, name: { type: 'string' } } },
    csrfToken: { type: 'string', description: 'Send it as X-CSRF-Token with every POST, PUT, PATCH and DELETE the session makes' },
  },
} as const;

/** A member of the organization (GET /v1/members and the others of section 8). */
export const memberSchema = {
  $id: 'Member',
  type: 'object',
  required: ['id', 'email', 'role', 'status', 'limit', 'limitReset', 'limitRemaining', 'createdAt'],
  properties: {
    id: { type: 'string' },
    email: { type: 'string' },
    role: { enum: ['owner', 'admin', 'member'] },
    status: { enum: ['invited', 'active'], description: 'invited: no password set yet' },
    limit: { type: ['number', 'null'], description: 'Personal spending limit, RUB' },
    limitReset: { enum: ['daily', 'weekly', 'monthly', 'never', null] },
    limitRemaining: { type: ['number', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    inviteToken: { type: 'string', description: 'Only in the reply to POST /v1/members' },
    inviteUrl: { type: 'string', description: 'Only in the reply to POST /v1/members: `<PUBLIC_BASE_URL>/console/invite#token=…`' },
  },
} as const;

export const memberListSchema = {
  $id: 'MemberList',
  type: 'object',
  required: ['data'],
  properties: { data: { type: 'array', items: memberSchema } },
} as const;

export const removedMemberSchema = {
  $id: 'RemovedMember',
  type: 'object',
  required: ['id', 'deleted'],
  properties: { id: { type: 'string' }, deleted: { const: true } },
} as const;

/** GET /v1/activity (decisions.md section 8), as OpenRouter's /api/v1/activity in RUB. */
export const activitySchema = {
  $id: 'Activity',
  type: 'object',
  required: ['data'],
  properties: {
    data: {
      type: 'array',
      description: 'One item per day x model x endpoint that had activity, newest day first',
      items: {
        type: 'object',
        required: ['date', 'model', 'provider_name', 'endpoint_id', 'usage', 'requests', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens'],
        properties: {
          date: { type: 'string', format: 'date', description: 'The day the generations were created (days from 01:00 Moscow time)' },
          model: { type: 'string' },
          provider_name: { type: 'string', description: 'The provider that answered (a failure: the last tried; empty when none was)' },
          endpoint_id: { type: 'string', description: 'The endpoint that answered (a failure: the last tried; empty when none was)' },
          usage: { type: 'number', description: 'Charged, RUB: summed over any period it equals the ledger\'s charges' },
          requests: { type: 'integer', description: 'Generations that ended: completed, failed or cancelled' },
          prompt_tokens: { type: 'integer' },
          completion_tokens: { type: 'integer' },
          reasoning_tokens: { type: 'integer' },
          cached_tokens: { type: 'integer' },
        },
      },
    },
  },
} as const;
