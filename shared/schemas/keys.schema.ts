/** Request schemas of the key management routes (POST /v1/keys, PATCH /v1/keys/{id}). */
// Limits are stored as numeric(30, 10): at most 20 integer digits; a larger one was a 500 (docs/faults.md).
const money = { type: ['number', 'string', 'null'], pattern: '^\\d{1,15}(\\.\\d+)?$', maxLength: 64, minimum: 0, maximum: 999_999_999_999_999 } as const;
const limitReset = { enum: ['daily', 'weekly', 'monthly', 'never', null] } as const;
const models = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, maxItems: 500 } as const;
const rate = { type: ['integer', 'null'], minimum: 0, maximum: 1_000_000 } as const;

/** The fields a key is created with and may later change (docs/key-permissions.md says who may change which). */
const keyFields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  limit: money,
  limit_reset: limitReset,
  allowed_models: models,
  rate_limit_per_minute: rate,
} as const;

export const createKeySchema = {
  $id: 'CreateKeyRequest',
  type: 'object',
  additionalProperties: false,
  properties: {
    ...keyFields,
    user_id: { type: 'string', minLength: 1, description: 'Owner and admin only: issue the key to this user of the organization' },
  },
} as const;

export const updateKeySchema = {
  $id: 'UpdateKeyRequest',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    ...keyFields,
    disabled: { type: 'boolean' },
  },
} as const;

export interface CreateKeyBody {
  name?: string;
  limit?: number | string | null;
  limit_reset?: 'daily' | 'weekly' | 'monthly' | 'never' | null;
  allowed_models?: string[];
  rate_limit_per_minute?: number | null;
  user_id?: string;
}
export type UpdateKeyBody = Omit<CreateKeyBody, 'user_id'> & { disabled?: boolean };
