import { MEDIA_OPERATIONS, MODEL_TYPES, PRICE_FIELDS, PROVIDER_KINDS } from './catalog.types';

const decimal = { anyOf: [{ type: 'number' }, { type: 'string', pattern: '^-?\\d+(\\.\\d+)?$' }] };
const price = { type: 'object', additionalProperties: false, properties: Object.fromEntries(PRICE_FIELDS.map((f) => [f, decimal])) };

/** JSON Schema of config/catalog.json (decisions.md section 1). Cross-references are checked in code. */
export const catalogSchema = {
  $id: 'catalog',
  type: 'object',
  required: ['providers', 'models'],
  additionalProperties: false,
  properties: {
    $schema: { type: 'string' },
    providers: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['kind', 'baseUrl'],
        additionalProperties: false,
        properties: {
          kind: { type: 'string' },
          baseUrl: { type: 'string', pattern: '^https?://' },
          apiKeyEnv: { type: 'string', pattern: '^[A-Z_][A-Z0-9_]*$' },
          region: { type: 'string', minLength: 1 },
          timeoutMs: { type: 'integer', minimum: 100 },
          maxConcurrency: { type: 'integer', minimum: 0 },
        },
      },
    },
    models: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['displayName', 'type', 'endpoints'],
        additionalProperties: false,
        properties: {
          displayName: { type: 'string', minLength: 1 },
          type: { enum: [...MODEL_TYPES] },
          endpoints: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['provider', 'upstreamModel', 'price'],
              additionalProperties: false,
              properties: {
                provider: { type: 'string' },
                upstreamModel: { type: 'string', minLength: 1 },
                price,
                // The provider's own batch API at these prices (docs/batches.md); where it may appear is checked in code.
                batch: { type: 'object', required: ['price'], additionalProperties: false, properties: { price } },
                // Prices per processing tier (`priority`, `flex`); which tiers, where and which price names are checked in code.
                tiers: { type: 'object', additionalProperties: { type: 'object', required: ['price'], additionalProperties: false, properties: { price } } },
                supports: { type: 'array', items: { type: 'string' }, uniqueItems: true },
                contextLength: { type: 'integer', minimum: 1 },
                maxOutputTokens: { type: 'integer', minimum: 1 },
                maxDimensions: { type: 'integer', minimum: 1 },
                defaultDimensions: { type: 'integer', minimum: 1 },
                multimodal: { type: 'boolean' },
                maxImages: { type: 'integer', minimum: 1 },
                maxDurationSeconds: { type: 'number', exclusiveMinimum: 0 },
                legacy: { type: 'boolean' },
                // Text goes upstream as OpenAI Responses API calls (POST /responses), not chat completions: openai kind, chat models.
                responsesApi: { type: 'boolean' },
                operations: { type: 'array', items: { enum: [...MEDIA_OPERATIONS] }, uniqueItems: true },
              },
            },
          },
        },
      },
    },
  },
} as const;

export { PROVIDER_KINDS };
