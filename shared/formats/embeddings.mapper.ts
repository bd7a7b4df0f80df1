/**
 * POST /v1/embeddings body → canonical inputs, and the result → OpenAI's embedding list
 * (https://platform.openai.com/docs/api-reference/embeddings/object). `base64` is the little-endian float32
 * array, as OpenAI sends it and as the OpenAI SDK decodes it (it asks for base64 by default).
 */
import type { EmbeddingInput, EmbeddingResult } from '../providers/provider.types';
import type { EmbeddingMultimodalInput, EmbeddingsBody } from '../schemas/embeddings.schema';
import type { EmbeddingUsage } from './format-utils';

export interface CanonicalEmbeddings {
  inputs: EmbeddingInput[];
  dimensions?: number;
  /** Some input carries an image: only endpoints marked `multimodal` may serve it. */
  hasImages: boolean;
  /** The inputs are token ids: only providers that take token arrays may serve them. */
  hasTokens: boolean;
  user?: string;
}

export function embeddingsToCanonical(body: EmbeddingsBody): CanonicalEmbeddings {
  const input = body.input;
  // One array of token ids is one input; an array of token arrays is one input each.
  const raw = typeof input === 'string' ? [input] : input.length > 0 && typeof input[0] === 'number' ? [input as number[]] : (input as Array<string | number[] | EmbeddingMultimodalInput>);
  let hasImages = false;
  let hasTokens = false;
  const inputs = raw.map((item): EmbeddingInput => {
    if (typeof item === 'string') return { type: 'text', text: item };
    if (Array.isArray(item)) {
      hasTokens = true;
      return { type: 'tokens', tokens: item };
    }
    return {
      type: 'multimodal',
      content: item.content.map((block) => {
        if (block.type === 'text') return { type: 'text', text: block.text };
        hasImages = true;
        return { type: 'image_url', url: block.image_url.url };
      }),
    };
  });
  const out: CanonicalEmbeddings = { inputs, hasImages, hasTokens };
  if (body.dimensions !== undefined) out.dimensions = body.dimensions;
  if (body.user !== undefined) out.user = body.user;
  return out;
}

/** A vector as base64 of its little-endian float32 bytes. */
export function encodeEmbeddingBase64(vector: readonly number[]): string {
  const bytes = new ArrayBuffer(vector.length * 4);
  const view = new DataView(bytes);
  vector.forEach((x, i) => view.setFloat32(i * 4, x, true));
  return Buffer.from(bytes).toString('base64');
}

/** The inverse of `encodeEmbeddingBase64`. */
export function decodeEmbeddingBase64(base64: string): Float32Array {
  const buf = Buffer.from(base64, 'base64');
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const out = new Float32Array(Math.floor(buf.byteLength / 4));
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

export interface EmbeddingList {
  id: string;
  object: 'list';
  data: Array<{ object: 'embedding'; embedding: number[] | string; index: number }>;
  model: string;
  usage: EmbeddingUsage;
  switchyard?: Record<string, unknown>;
}

export function buildEmbeddingList(a: {
  id: string;
  /** Public model id that answered. */
  model: string;
  result: EmbeddingResult;
  encoding: 'float' | 'base64';
  usage: EmbeddingUsage;
  switchyard?: Record<string, unknown>;
}): EmbeddingList {
  const list: EmbeddingList = {
    id: a.id,
    object: 'list',
    data: a.result.vectors.map((v, index) => ({
      object: 'embedding',
      embedding: a.encoding === 'base64' ? encodeEmbeddingBase64(v) : v,
      index,
    })),
    model: a.model,
    usage: a.usage,
  };
  if (a.switchyard) list.switchyard = a.switchyard;
  return list;
}

/** Tokens an input stands for, for the reservation bound: token arrays count exactly, text is estimated. */
export function embeddingInputTokens(input: EmbeddingInput, estimate: (text: string) => number): number {
  return input.type === 'tokens' ? input.tokens.length : estimate(JSON.stringify(input));
}
