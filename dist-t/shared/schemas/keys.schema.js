"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.updateKeySchema = exports.createKeySchema = void 0;
/** Request schemas of the key management routes (POST /v1/keys, PATCH /v1/keys/{id}). */
// Limits are stored as numeric(30, 10): at most 20 integer digits; a larger one was a 500 (docs/faults.md).
const money = { type: ['number', 'string', 'null'], pattern: '^\\d{1,15}(\\.\\d+)?$', maxLength: 64, minimum: 0, maximum: 999_999_999_999_999 };
const limitReset = { enum: ['daily', 'weekly', 'monthly', 'never', null] };
const models = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, maxItems: 500 };
const rate = { type: ['integer', 'null'], minimum: 0, maximum: 1_000_000 };
/** The fields a key is created with and may later change (docs/key-permissions.md says who may change which). */
const keyFields = {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    limit: money,
    limit_reset: limitReset,
    allowed_models: models,
    rate_limit_per_minute: rate,
};
exports.createKeySchema = {
    $id: 'CreateKeyRequest',
    type: 'object',
    additionalProperties: false,
    properties: {
        ...keyFields,
        user_id: { type: 'string', minLength: 1, description: 'Owner and admin only: issue the key to this user of the organization' },
    },
};
exports.updateKeySchema = {
    $id: 'UpdateKeyRequest',
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    properties: {
        ...keyFields,
        disabled: { type: 'boolean' },
    },
};
