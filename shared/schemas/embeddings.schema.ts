/**
 * POST /v1/embeddings body (interface.md; OpenAI https://platform.openai.com/docs/api-reference/embeddings/create).
 * `input` is a string, 1..2048 items each a string or a multimodal block, or token ids as OpenAI takes them:
 * one array of 1..8192 integers (one input), or 1..2048 arrays of integers (the Python LangChain client sends these
 * by default).
 */
import { embeddingsRoutingSchema, type EmbeddingsRouting } from './routing.schema';

/** decisions.md section 3: an embeddings call takes at most 2048 inputs. */
export const MAX_EMBEDDING_INPUTS = 2048;

/** Token ids are vocabulary indexes: non-negative integers (bounded so a double never sneaks in as an id). */
export const MAX_TOKEN_ID = 2_147_483_647;
/** Tokens in one token-array input (OpenAI's embedding models take at most 8192 a input). */
export const MAX_TOKENS_PER_INPUT = 8192;
/** Tokens over all token-array inputs of one request (OpenAI's per-request limit). */
export const MAX_TOKENS_PER_REQUEST = 300_000;

const tokenId = { type: 'integer', minimum: 0, maximum: MAX_TOKEN_ID } as const;
const tokenArray = { type: 'array', minItems: 1, maxItems: MAX_TOKENS_PER_INPUT, items: tokenId } as const;

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
      // At most 2048 inputs; one array of token ids is a single input, as long as a token array may be.
      if: { type: 'array', contains: { type: 'number' } },
      then: { maxItems: MAX_TOKENS_PER_INPUT },
      else: { maxItems: MAX_EMBEDDING_INPUTS },
      // Each item: a non-empty string, a token id (the whole input is one token array), a token array, else a
      // multimodal block. Mixing the forms is refused by `embeddingsInputIssues`.
      items: {
        if: { type: 'string' },
        then: { minLength: 1 },
        else: { if: { type: 'number' }, then: tokenId, else: { if: { type: 'array' }, then: tokenArray, else: multimodalBlock } },
      },
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
  input: string | Array<string | EmbeddingMultimodalInput> | number[] | number[][];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
  provider?: EmbeddingsRouting;
}

/**
 * What the schema cannot say: an input is all text and blocks, one array of token ids, or all token arrays,
 * never a mix; and the token arrays together stay within MAX_TOKENS_PER_REQUEST.
 */
export function embeddingsInputIssues(input: EmbeddingsBody['input']): Array<{ path: string; message: string }> {
  if (!Array.isArray(input)) return [];
  const items = input as unknown[];
  const ids = items.filter((x) => typeof x === 'number').length;
  const arrays = items.filter((x) => Array.isArray(x)).length;
  if (ids > 0 && ids !== items.length) {
    const at = items.findIndex((x) => typeof x !== 'number');
    return [{ path: `/input/${at}`, message: 'must be an integer: an input of token ids is one array of integers' }];
  }
  if (arrays > 0 && arrays !== items.length) {
    const at = items.findIndex((x) => !Array.isArray(x));
    return [{ path: `/input/${at}`, message: 'must be an array of integers: token arrays cannot be mixed with text' }];
  }
  const total = ids > 0 ? ids : arrays > 0 ? (items as number[][]).reduce((n, a) => n + a.length, 0) : 0;
  if (total > MAX_TOKENS_PER_REQUEST) return [{ path: '/input', message: `must carry at most ${MAX_TOKENS_PER_REQUEST} tokens in all (got ${total})` }];
  return [];
}
