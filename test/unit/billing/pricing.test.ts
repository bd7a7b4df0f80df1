import fc from 'fast-check';
import { decimalTokenCost, estimateInputTokens, FILE_INPUT_TOKENS, IMAGE_INPUT_TOKENS, tokenCost, textBound } from '../../../shared/billing/pricing';
import type { Price } from '../../../shared/catalog/catalog.types';

// tokenCost works in integers over the price's power of ten; decimal.js's arithmetic (decimalTokenCost) is the
// reference wherever it has the digits (20 significant ones) for the exact value.

/** A catalog price as the catalog may write it: up to 6 decimals, up to a million RUB per million tokens. */
const priceText = fc
  .tuple(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 999_999 }), fc.integer({ min: 0, max: 6 }))
  .map(([whole, fraction, places]) => (places === 0 ? String(whole) : `${whole}.${String(fraction).padStart(6, '0').slice(0, places)}`));

const price = fc.record(
  { prompt: priceText, completion: priceText, cached_prompt: priceText, request: priceText },
  { requiredKeys: ['prompt', 'completion'] },
) as fc.Arbitrary<Price>;

const tokens = fc.integer({ min: 0, max: 2_000_000 });

describe('tokenCost', () => {
  it('equals the decimal.js computation for any catalog price and token counts', () => {
    fc.assert(
      fc.property(price, tokens, tokens, tokens, (p, input, output, cached) => {
        const usage = { inputTokens: input, outputTokens: output, cachedTokens: cached };
        expect(tokenCost(p, usage).toFixed()).toBe(decimalTokenCost(p, usage).toFixed());
      }),
      { numRuns: 2000, seed: 12 },
    );
  });

  it('prices exactly, cached tokens at their own rate, the request fee once', () => {
    const p: Price = { prompt: '10', completion: '40', cached_prompt: '2.5', request: '0.001' };
    // (10 × 900 + 2.5 × 100 + 40 × 50) / 1e6 + 0.001
    expect(tokenCost(p, { inputTokens: 1000, outputTokens: 50, cachedTokens: 100 }).toFixed()).toBe('0.01225');
    // More cached than input counts as all input cached.
    expect(tokenCost(p, { inputTokens: 10, outputTokens: 0, cachedTokens: 50 }).toFixed()).toBe('0.001025');
    expect(tokenCost({ prompt: '0', completion: '0' }, { inputTokens: 5, outputTokens: 5 }).toFixed()).toBe('0');
    expect(textBound({ prompt: '0.15', completion: '0.6' }, 3, 16384).toFixed()).toBe('0.00983085');
    // A price given as a catalog number.
    expect(tokenCost({ prompt: 0.1 as unknown as string, completion: '1' }, { inputTokens: 7, outputTokens: 0 }).toFixed()).toBe('0.0000007');
  });

  it('falls back to decimal arithmetic for token counts that are not whole numbers', () => {
    const p: Price = { prompt: '3', completion: '9' };
    expect(tokenCost(p, { inputTokens: 1.5, outputTokens: 2 }).toFixed()).toBe(decimalTokenCost(p, { inputTokens: 1.5, outputTokens: 2 }).toFixed());
    expect(tokenCost(p, { inputTokens: 1.5, outputTokens: 2 }).toFixed()).toBe('0.0000225');
  });
});

describe('estimateInputTokens', () => {
  const message = (content: unknown[]) => ({ input: [{ type: 'message', role: 'user', content }] });

  it('counts each image, and each file by URL, at its allowance: their URLs are a few characters, their tokens are not', () => {
    const text = estimateInputTokens(message([{ type: 'input_text', text: 'What is in these?' }]));
    const image = { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'high' };
    const withImages = estimateInputTokens(message([{ type: 'input_text', text: 'What is in these?' }, image, image, image]));
    expect(withImages - text).toBeGreaterThanOrEqual(3 * IMAGE_INPUT_TOKENS);
    const byUrl = estimateInputTokens(message([{ type: 'input_file', file_url: 'https://example.com/a.pdf' }]));
    expect(byUrl).toBeGreaterThanOrEqual(FILE_INPUT_TOKENS);
    // A file inline is counted by its characters (base64), with no allowance on top.
    const inline = { type: 'input_file', file_data: `data:application/pdf;base64,${'A'.repeat(3_000)}`, filename: 'a.pdf' };
    expect(estimateInputTokens(message([inline]))).toBeLessThan(FILE_INPUT_TOKENS);
    expect(estimateInputTokens(message([inline]))).toBeGreaterThan(1_000);
  });
});
