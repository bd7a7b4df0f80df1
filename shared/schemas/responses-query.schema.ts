/**
 * Query strings of the stored-response routes: GET /v1/responses/{id} and GET /v1/responses/{id}/input_items
 * (docs/responses.md). Checked with the coercing query instance of shared/schemas/ajv.ts.
 */
/** `include` as the SDKs send it (`include=a`, `include[]=a`, repeated); accepted and not used. */
const includeQuery = { type: ['string', 'array'], items: { type: 'string' } } as const;

/** GET /v1/responses/{id}: `stream=true` streams a background response again, after `starting_after`. */
export const retrieveResponseQuerySchema = {
  $id: 'RetrieveResponseQuery',
  type: 'object',
  additionalProperties: false,
  properties: {
    stream: { type: 'boolean', default: false, description: 'Replay a background response as Server-Sent Events (live while it runs)' },
    starting_after: { type: 'integer', minimum: -1, maximum: 1_000_000_000, default: -1, description: 'Only events with a larger sequence_number' },
    include: includeQuery,
    'include[]': includeQuery,
    include_obfuscation: { type: 'boolean' },
  },
} as const;

export interface RetrieveResponseQuery {
  stream: boolean;
  starting_after: number;
}

/** GET /v1/responses/{id}/input_items (OpenAI's list: newest first by default, `after` an item id). */
export const inputItemsQuerySchema = {
  $id: 'ResponseInputItemsQuery',
  type: 'object',
  additionalProperties: false,
  properties: {
    order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
    after: { type: 'string', minLength: 1, maxLength: 200, description: 'Item id: list the items after it, in the chosen order' },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    include: includeQuery,
    'include[]': includeQuery,
  },
} as const;

export interface InputItemsQuery {
  order: 'asc' | 'desc';
  after?: string;
  limit: number;
}
