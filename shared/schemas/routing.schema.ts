/**
 * JSON Schemas of the provider routing object (field `provider` of generation requests; interface.md
 * "Provider routing object", decisions.md section 6). No `$id`: these are embedded in the body schemas.
 */
import { MAX_PRICE_FIELDS, PROVIDER_SORTS, type ProviderPreferences } from '../routing/routing.types';

const providerList = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, maxItems: 100 } as const;

/** A ceiling in RUB: a JSON number or a decimal string (compared exactly by the router), never negative. */
const ceiling = { type: ['number', 'string'], minimum: 0, pattern: '^\\d+(\\.\\d+)?$' } as const;

const maxPrice = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(MAX_PRICE_FIELDS.map((f) => [f, ceiling])),
} as const;

const routingProperties = {
  order: providerList,
  only: providerList,
  ignore: providerList,
  allow_fallbacks: { type: 'boolean' },
  require_parameters: { type: 'boolean' },
  sort: { enum: [...PROVIDER_SORTS] },
  data_residency: { type: 'string', minLength: 1, maxLength: 64 },
  max_price: maxPrice,
} as const;

/** Text, images and media: the full routing object. */
export const routingSchema = {
  type: 'object',
  additionalProperties: false,
  properties: routingProperties,
} as const;

/** POST /v1/systemone: the same object without `data_residency` (interface.md). */
export const typedQuestionRoutingSchema = {
  type: 'object',
  additionalProperties: false,
  properties: (({ data_residency: _omit, ...rest }) => rest)(routingProperties),
} as const;

/** POST /v1/embeddings: `only`, `ignore`, `order`, `allow_fallbacks`, `data_residency` (interface.md). */
export const embeddingsRoutingSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    only: providerList,
    ignore: providerList,
    order: providerList,
    allow_fallbacks: routingProperties.allow_fallbacks,
    data_residency: routingProperties.data_residency,
  },
} as const;

export type ProviderRouting = ProviderPreferences;
export type TypedQuestionRouting = Omit<ProviderPreferences, 'data_residency'>;
export type EmbeddingsRouting = Pick<ProviderPreferences, 'only' | 'ignore' | 'order' | 'allow_fallbacks' | 'data_residency'>;
