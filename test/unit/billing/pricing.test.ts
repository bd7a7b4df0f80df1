import fc from 'fast-check';
import { decimalTokenCost, tokenCost, textBound } from '../../../shared/billing/pricing';
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
