/**
 * POST /v1/embeddings body (interface.md; OpenAI https://platform.openai.com/docs/api-reference/embeddings/create).
 * `input` is a string, or 1..2048 items each a string or a multimodal block. Token arrays are refused.
 */
import { embeddingsRoutingSchema, type EmbeddingsRouting } from './routing.schema';

/** decisions.md section 3: an embeddings call takes at most 2048 inputs. */
export const MAX_EMBEDDING_INPUTS = 2048;

const multimodalBlock = {
  type: 'object',
  required: ['content'],
  additionalProperties: false,
  properties: {
    content: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['type'],
        properties: { type: { enum: ['text', 'image_url'] } },
        allOf: [
          { if: { required: ['type'], properties: { type: { const: 'text' } } }, then: { required: ['text'], properties: { text: { type: 'string', minLength: 1 } } } },
          {
            if: { required: ['type'], properties: { type: { const: 'image_url' } } },
            then: {
              required: ['image_url'],
              properties: { image_url: { type: 'object', required: ['url'], properties: { url: { type: 'string', minLength: 1 } } } },
            },
          },
        ],
      },
    },
  },
} as const;

export const embeddingsSchema = {
  $id: 'EmbeddingsRequest',
  type: 'object',
  additionalProperties: false,
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 512 },
    input: {
      type: ['string', 'array'],
      minLength: 1,
      minItems: 1,
      maxItems: MAX_EMBEDDING_INPUTS,
      // Each item: a non-empty string, else a multimodal block (a token array fails here: "must be object").
      items: { if: { type: 'string' }, then: { minLength: 1 }, else: multimodalBlock },
    },
    encoding_format: { enum: ['float', 'base64'] },
    dimensions: { type: 'integer', minimum: 1 },
    user: { type: 'string', maxLength: 512 },
    provider: embeddingsRoutingSchema,
  },
} as const;

export type EmbeddingContentBlock = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };
export interface EmbeddingMultimodalInput {
  content: EmbeddingContentBlock[];
}

export interface EmbeddingsBody {
  model: string;
  input: string | Array<string | EmbeddingMultimodalInput>;
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
  provider?: EmbeddingsRouting;
}
