import { parametersToDrop, warningsFor } from '../../../shared/routing/route-parameters';
import { planRoute } from '../../../shared/routing/plan-route';
import { RoutingError } from '../../../shared/routing/routing-errors';
import type { PlanRouteInput, RoutePlan } from '../../../shared/routing/routing.types';
import type { Catalog } from '../../../shared/catalog/catalog.types';
import { buildCatalog, slugs } from './catalog-fixture';

/**
 * A tier other than standard (`service_tier: priority | flex`) is a requested parameter that an endpoint takes when its
 * catalog `tiers` price that tier (docs/decisions.md "Routing"): the others stay as fallbacks, sent without it.
 */
const M = 'openai/gpt-4.1-mini';

function tiered(): Catalog {
  const c = buildCatalog({
    [M]: {
      endpoints: [
        { provider: 'beta', price: { prompt: '30', completion: '150' } },
        { provider: 'acme', price: { prompt: '40', completion: '160' } },
        { provider: 'gamma', price: { prompt: '40', completion: '160' } },
      ],
    },
  });
  const [, acme, gamma] = c.models[M]!.endpoints;
  acme!.tiers = { priority: { price: { prompt: '70', completion: '280' } }, flex: { price: { prompt: '20', completion: '80' } } };
  gamma!.tiers = { priority: { price: { prompt: '70', completion: '280' } } };
  return c;
}

const catalog = tiered();
function plan(serviceTier: string | undefined, over: Partial<PlanRouteInput> = {}): RoutePlan {
  return planRoute({ catalog, models: [M], stats: {}, requestedParameters: serviceTier && !['auto', 'default'].includes(serviceTier) ? ['service_tier'] : [], serviceTier, ...over });
}

describe('planRoute: service tiers', () => {
  it('tries the endpoints that sell the tier first; the others stay as fallbacks, sent without it and said so', () => {
    const p = plan('priority');
    expect(slugs(p.candidates)).toEqual([`${M}:acme`, `${M}:gamma`, `${M}:beta`]);
    expect(parametersToDrop(p, `${M}:acme`)).toEqual([]);
    expect(parametersToDrop(p, `${M}:beta`)).toEqual(['service_tier']);
    expect(warningsFor(p, `${M}:beta`)).toEqual([`Parameter 'service_tier' is not supported by ${M} via beta and was ignored`]);
    expect(slugs(plan('flex').candidates)).toEqual([`${M}:acme`, `${M}:beta`, `${M}:gamma`]);
  });

  it('leaves standard processing (auto, default, none) to the usual order, dropping nothing', () => {
    for (const tier of [undefined, 'auto', 'default']) {
      const p = plan(tier);
      expect(slugs(p.candidates)).toEqual([`${M}:beta`, `${M}:acme`, `${M}:gamma`]);
      expect(p.droppedParameters).toEqual([]);
    }
  });

  it('a tier no endpoint prices (scale) is left out everywhere, with a warning', () => {
    const p = plan('scale');
    expect(p.droppedParameters).toEqual(['service_tier']);
    expect(slugs(p.candidates)).toEqual([`${M}:beta`, `${M}:acme`, `${M}:gamma`]);
  });

  it('with require_parameters only the endpoints selling the tier remain; none is parameters_unsupported', () => {
    const p = plan('flex', { preferences: { require_parameters: true } });
    expect(slugs(p.candidates)).toEqual([`${M}:acme`]);
    expect(p.dropped.find((d) => d.provider === 'beta')).toMatchObject({ reason: 'require_parameters', detail: "Does not support requested parameters: service_tier 'flex'" });
    const untiered = buildCatalog({ [M]: { endpoints: [{ provider: 'beta' }, { provider: 'gamma' }] } });
    const none = (() => {
      try {
        return plan('flex', { catalog: untiered, preferences: { require_parameters: true } });
      } catch (e) {
        return e;
      }
    })();
    expect(none).toBeInstanceOf(RoutingError);
    expect((none as RoutingError).reason).toBe('parameters_unsupported');
  });

  it('max_price and sort: price read the price of the tier asked for where an endpoint sells it', () => {
    // Priority costs 280 a million output tokens where it is sold: above a ceiling of 200, which the standard 150 meets.
    const capped = plan('priority', { preferences: { max_price: { completion: 200 } } });
    expect(slugs(capped.candidates)).toEqual([`${M}:beta`]);
    expect(capped.dropped.filter((d) => d.reason === 'max_price').map((d) => d.provider).sort()).toEqual(['acme', 'gamma']);
    // Flex at acme (20 + 80) is the cheapest; without a tier, beta (30 + 150) is.
    expect(slugs(plan('flex', { preferences: { sort: 'price' } }).candidates)[0]).toBe(`${M}:acme`);
    expect(slugs(plan(undefined, { preferences: { sort: 'price' } }).candidates)[0]).toBe(`${M}:beta`);
  });

  it('sort: latency and throughput order the endpoints within the tier groups: those selling the tier first', () => {
    const stats = { [`${M}:beta`]: { samples: 20, latencyMs: 100, throughput: 90 }, [`${M}:acme`]: { samples: 20, latencyMs: 300, throughput: 40 }, [`${M}:gamma`]: { samples: 20, latencyMs: 200, throughput: 120 } };
    expect(slugs(plan('priority', { stats, preferences: { sort: 'latency' } }).candidates)).toEqual([`${M}:gamma`, `${M}:acme`, `${M}:beta`]);
    expect(slugs(plan('priority', { stats, preferences: { sort: 'throughput' } }).candidates)).toEqual([`${M}:gamma`, `${M}:acme`, `${M}:beta`]);
    expect(slugs(plan('flex', { stats, preferences: { sort: 'latency' } }).candidates)).toEqual([`${M}:acme`, `${M}:beta`, `${M}:gamma`]);
    expect(slugs(plan(undefined, { stats, preferences: { sort: 'latency' } }).candidates)).toEqual([`${M}:beta`, `${M}:gamma`, `${M}:acme`]);
  });

  it('an explicit order still wins; a sticky endpoint without the tier does not jump ahead of one that sells it', () => {
    expect(slugs(plan('priority', { preferences: { order: ['beta'] } }).candidates)[0]).toBe(`${M}:beta`);
    expect(slugs(plan('priority', { sticky: `${M}:beta` }).candidates)[0]).toBe(`${M}:acme`);
    expect(slugs(plan('priority', { sticky: `${M}:gamma` }).candidates)[0]).toBe(`${M}:gamma`);
    expect(slugs(plan(undefined, { sticky: `${M}:gamma` }).candidates)[0]).toBe(`${M}:gamma`);
  });
});
