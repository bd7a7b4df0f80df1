"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.embeddingsRoutingSchema = exports.typedQuestionRoutingSchema = exports.routingSchema = void 0;
/**
 * JSON Schemas of the provider routing object (field `provider` of generation requests; interface.md
 * "Provider routing object", decisions.md section 6). No `$id`: these are embedded in the body schemas.
 */
const routing_types_1 = require("../routing/routing.types");
const providerList = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, maxItems: 100 };
/** A ceiling in RUB: a JSON number or a decimal string (compared exactly by the router), never negative. */
const ceiling = { type: ['number', 'string'], minimum: 0, pattern: '^\\d+(\\.\\d+)?$' };
const maxPrice = {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(routing_types_1.MAX_PRICE_FIELDS.map((f) => [f, ceiling])),
};
const routingProperties = {
    order: providerList,
    only: providerList,
    ignore: providerList,
    allow_fallbacks: { type: 'boolean' },
    require_parameters: { type: 'boolean' },
    sort: { enum: [...routing_types_1.PROVIDER_SORTS] },
    data_residency: { type: 'string', minLength: 1, maxLength: 64 },
    max_price: maxPrice,
};
/** Text, images and media: the full routing object. */
exports.routingSchema = {
    type: 'object',
    additionalProperties: false,
    properties: routingProperties,
};
/** POST /v1/systemone: the same object without `data_residency` (interface.md). */
exports.typedQuestionRoutingSchema = {
    type: 'object',
    additionalProperties: false,
    properties: (({ data_residency: _omit, ...rest }) => rest)(routingProperties),
};
/** POST /v1/embeddings: `only`, `ignore`, `order`, `allow_fallbacks`, `data_residency` (interface.md). */
exports.embeddingsRoutingSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        only: providerList,
        ignore: providerList,
        order: providerList,
        allow_fallbacks: routingProperties.allow_fallbacks,
        data_residency: routingProperties.data_residency,
    },
};
