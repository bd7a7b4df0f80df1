import { buildEmbeddingList, decodeEmbeddingBase64, embeddingsToCanonical, encodeEmbeddingBase64 } from '../../../shared/formats/embeddings.mapper';
import { embeddingUsage } from '../../../shared/formats/format-utils';
import type { EmbeddingResult } from '../../../shared/providers/provider.types';
import { sdkAnswering } from './helpers';

describe('embeddingsToCanonical', () => {
  it('maps a string, strings and multimodal blocks', () => {
    expect(embeddingsToCanonical({ model: 'm', input: 'hello' })).toEqual({ inputs: [{ type: 'text', text: 'hello' }], hasImages: false, hasTokens: false });
    expect(embeddingsToCanonical({ model: 'm', input: ['a', 'b'], dimensions: 256, user: 'u' })).toEqual({
      inputs: [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
      dimensions: 256,
      user: 'u',
      hasImages: false,
      hasTokens: false,
    });
    const mm = embeddingsToCanonical({
      model: 'm',
      input: [{ content: [{ type: 'text', text: 'a cat' }, { type: 'image_url', image_url: { url: 'https://x/cat.png' } }] }, { content: [{ type: 'text', text: 'only text' }] }],
    });
    expect(mm).toEqual({
      inputs: [
        { type: 'multimodal', content: [{ type: 'text', text: 'a cat' }, { type: 'image_url', url: 'https://x/cat.png' }] },
        { type: 'multimodal', content: [{ type: 'text', text: 'only text' }] },
      ],
      hasImages: true,
      hasTokens: false,
    });
  });

  it('maps one token array to one input, and an array of token arrays to one input each', () => {
    expect(embeddingsToCanonical({ model: 'm', input: [5, 6, 7] })).toEqual({ inputs: [{ type: 'tokens', tokens: [5, 6, 7] }], hasImages: false, hasTokens: true });
    expect(embeddingsToCanonical({ model: 'm', input: [[5], [6, 7]] }).inputs).toEqual([
      { type: 'tokens', tokens: [5] },
      { type: 'tokens', tokens: [6, 7] },
    ]);
  });
});

describe('embedding list', () => {
  const result: EmbeddingResult = { vectors: [[0.1, -0.25, 3.5], [1e-8, 0, -1]], usage: { inputTokens: 6 } };
  const usage = embeddingUsage(6, '0.00012');

  it('lists float vectors by input position', () => {
    expect(buildEmbeddingList({ id: 'emb-1', model: 'openai/text-embedding-3-small', result, encoding: 'float', usage })).toEqual({
      id: 'emb-1',
      object: 'list',
      data: [
        { object: 'embedding', embedding: [0.1, -0.25, 3.5], index: 0 },
        { object: 'embedding', embedding: [1e-8, 0, -1], index: 1 },
      ],
      model: 'openai/text-embedding-3-small',
      usage: { prompt_tokens: 6, total_tokens: 6, cost_rub: 0.00012, cost: 0.00012 },
    });
  });

  it('encodes base64 as little-endian float32', () => {
    const b64 = encodeEmbeddingBase64([1, -2.5]);
    // 1.0f = 00 00 80 3f, -2.5f = 00 00 20 c0 (little-endian)
    expect([...Buffer.from(b64, 'base64')]).toEqual([0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0]);
    const decoded = decodeEmbeddingBase64(encodeEmbeddingBase64(result.vectors[0]!));
    expect(decoded).toBeInstanceOf(Float32Array);
    expect([...decoded]).toEqual(result.vectors[0]!.map(Math.fround));
    const list = buildEmbeddingList({ id: 'e', model: 'm', result, encoding: 'base64', usage });
    expect(typeof list.data[0]!.embedding).toBe('string');
    const raw = Buffer.from(list.data[1]!.embedding as string, 'base64');
    expect([...new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength))]).toEqual([Math.fround(1e-8), 0, -1]);
  });

  it('is decoded by the OpenAI SDK, which asks for base64 by default', async () => {
    const seen: { body?: unknown } = {};
    const body = JSON.stringify(buildEmbeddingList({ id: 'e', model: 'm', result, encoding: 'base64', usage }));
    const reply = await sdkAnswering(body, 'application/json', seen).embeddings.create({ model: 'm', input: ['a', 'b'] });
    expect(seen.body).toMatchObject({ encoding_format: 'base64' });
    expect(reply.data.map((d) => d.embedding)).toEqual(result.vectors.map((v) => v.map(Math.fround)));
  });
});
