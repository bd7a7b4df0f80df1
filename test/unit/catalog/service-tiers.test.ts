import fs from 'node:fs';
import path from 'node:path';
import { CatalogError, parseCatalog } from '../../../shared/catalog/load-catalog';
import { PROVIDER_KINDS, TIERED_PROVIDER_KINDS, type Catalog } from '../../../shared/catalog/catalog.types';
import { askedTier, offersTier, tierPrice } from '../../../shared/catalog/catalog-index';
import { adapterByKind } from '../../../shared/providers/registry';
import { money } from '../../../shared/money';
import { textBound, tokenCost } from '../../../shared/billing/pricing';

/** The catalog's `tiers` (docs/decisions.md "Money"): where they may be, what they must name, and the shipped prices. */
type Raw = { providers: Record<string, object>; models: Record<string, { displayName: string; type: string; endpoints: Array<Record<string, unknown>> }> };

const PRICE = { prompt: '40', cached_prompt: '10', completion: '160' };
const PRIORITY = { prompt: '70', cached_prompt: '17.5', completion: '280' };
function raw(endpoint: Record<string, unknown> = {}, type = 'chat', kind = 'openai'): Raw {
  return {
    providers: { p: { kind, baseUrl: 'https://p.example.com/v1' } },
    models: { 'p/m': { displayName: 'M', type, endpoints: [{ provider: 'p', upstreamModel: 'm', price: PRICE, tiers: { priority: { price: PRIORITY } }, ...endpoint }] } },
  };
}

function problems(r: Raw): string[] {
  try {
    parseCatalog(r, {});
  } catch (e) {
    if (e instanceof CatalogError) return e.problems;
    throw e;
  }
  return [];
}

describe('catalog tiers', () => {
  it('are read as decimal strings beside the standard price', () => {
    const c = parseCatalog(raw({ tiers: { priority: { price: { ...PRIORITY, prompt: 70 } }, flex: { price: { prompt: '20', cached_prompt: '5', completion: '80' } } } }), {});
    const e = c.models['p/m']!.endpoints[0]!;
    expect(e.tiers).toEqual({ priority: { price: PRIORITY }, flex: { price: { prompt: '20', cached_prompt: '5', completion: '80' } } });
    expect(e.price).toEqual(PRICE);
  });

  it.each([
    ['on a provider kind that sells no tiers', raw({}, 'chat', 'anthropic'), /endpoint 0: tiers on provider "p" of kind "anthropic", which sells no processing tiers \(tiers: openai\)/],
    ['on a model that is not a chat model', raw({}, 'embedding'), /endpoint 0: tiers on a embedding model \(only chat models\)/],
    ['of a tier the kind does not sell', raw({ tiers: { scale: { price: PRICE } } }), /endpoint 0: unknown tier "scale" \(tiers: priority, flex\)/],
    ['pricing a name the standard price lacks', raw({ tiers: { priority: { price: { ...PRIORITY, image: '1' } } } }), /priority price image has no regular price image/],
    ['lacking a name the standard price has', raw({ tiers: { priority: { price: { prompt: '70', completion: '280' } } } }), /priority prices lack cached_prompt, which the regular price names/],
    ['with a negative price', raw({ tiers: { flex: { price: { ...PRICE, completion: '-80' } } } }), /negative flex price completion = -80/],
    ['without a price', raw({ tiers: { priority: {} } }), /tiers\/priority must have required property 'price'/],
  ])('are refused %s', (_name, catalog, problem) => {
    const found = problems(catalog);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(problem);
  });

  it('are allowed only for kinds whose adapter sends the tier upstream', () => {
    for (const kind of PROVIDER_KINDS) {
      const text = adapterByKind[kind]?.text;
      const sent = text?.buildRequest({ model: 'm', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }], stream: false, serviceTier: 'priority' }, 'k');
      const body = JSON.stringify(sent?.body ?? {});
      expect([kind, body.includes('"service_tier":"priority"')]).toEqual([kind, TIERED_PROVIDER_KINDS[kind] !== undefined]);
    }
  });
});

describe('tier prices', () => {
  const e = parseCatalog(raw(), {}).models['p/m']!.endpoints[0]!;

  it('a tier the endpoint sells is priced at its own price; anything else at the standard price', () => {
    expect(tierPrice(e, 'priority')).toEqual(PRIORITY);
    for (const t of ['default', 'auto', 'flex', 'scale', undefined, null]) expect(tierPrice(e, t)).toBe(e.price);
    expect(offersTier(e, 'priority')).toBe(true);
    expect(offersTier(e, 'flex')).toBe(false);
    expect(offersTier(e, '__proto__')).toBe(false);
  });

  it('charge exactly: 1,200 input tokens of which 1,000 cached and 600 output, at each tier, and bound at the tier asked for', () => {
    const usage = { inputTokens: 1200, cachedTokens: 1000, outputTokens: 600 };
    // 200 × 70 + 1,000 × 17.5 + 600 × 280 = 199,500 per million; the standard price makes 200 × 40 + 1,000 × 10 + 600 × 160.
    expect(tokenCost(tierPrice(e, 'priority'), usage).toFixed()).toBe('0.1995');
    expect(tokenCost(tierPrice(e, 'default'), usage).toFixed()).toBe('0.114');
    expect(textBound(tierPrice(e, 'priority'), 1000, 100).toFixed()).toBe('0.098');
    expect(textBound(tierPrice(e, undefined), 1000, 100).toFixed()).toBe('0.056');
  });

  it('standard processing asks for no tier', () => {
    expect([undefined, null, 'auto', 'default', 'priority', 'flex'].map(askedTier)).toEqual([undefined, undefined, undefined, undefined, 'priority', 'flex']);
  });
});

describe('the shipped catalogs', () => {
  const load = (file: string): Catalog => parseCatalog(JSON.parse(fs.readFileSync(path.join(__dirname, '../../../config', file), 'utf8')), {});
  /** OpenAI's published prices as ratios of standard (https://openai.com/api-priority-processing/, flex: half). */
  const RATIOS: Record<string, Record<string, string>> = {
    'gpt-4.1-mini': { priority: '1.75' },
    'gpt-4.1': { priority: '1.75' },
    'o4-mini': { priority: money(2).dividedBy('1.1').toFixed(), flex: '0.5' },
  };

  it.each([['catalog.json'], ['catalog.demo.json']])('%s prices OpenAI priority and flex as OpenAI publishes them, on its own endpoints only', (file) => {
    const c = load(file);
    const seen: string[] = [];
    for (const m of Object.values(c.models)) {
      for (const e of m.endpoints) {
        if (!e.tiers) continue;
        expect(e.provider).toBe('openai');
        seen.push(e.upstreamModel);
        expect(Object.keys(e.tiers).sort()).toEqual(Object.keys(RATIOS[e.upstreamModel] ?? {}).sort());
        for (const [tier, t] of Object.entries(e.tiers)) {
          for (const [field, value] of Object.entries(t.price)) expect([tier, field, money(value!).dividedBy(e.price[field as keyof typeof e.price]!).toFixed()]).toEqual([tier, field, money(value!).isZero() ? 'NaN' : RATIOS[e.upstreamModel]![tier]]);
        }
      }
    }
    expect(seen.sort()).toEqual(Object.keys(RATIOS).sort());
  });
});
