import { MAX_PRICE_FIELDS, type PlanRouteInput, type RoutePlan } from '../../../shared/routing/routing.types';
import { parametersToDrop, warningsFor } from '../../../shared/routing/route-parameters';
import { planRoute } from '../../../shared/routing/plan-route';
import { RoutingError, RoutingInputError } from '../../../shared/routing/routing-errors';
import { buildCatalog, slugs } from './catalog-fixture';

const M = 'openai/gpt-4.1-mini';
const N = 'anthropic/claude-haiku';
const E = 'openai/text-embedding-3-small';

const ALL = ['temperature', 'top_p', 'tools', 'stream', 'logprobs', 'top_k', 'reasoning'];

const catalog = buildCatalog({
  [M]: {
    endpoints: [
      { provider: 'acme', price: { prompt: '40', completion: '160', request: '0' }, supports: ALL },
      { provider: 'beta', price: { prompt: '30', completion: '150' }, supports: ['temperature', 'stream'] },
      { provider: 'gamma', price: { prompt: '50', completion: '100' }, supports: ['temperature', 'tools', 'stream', 'logprobs'] },
      { provider: 'delta', price: { prompt: '45', completion: '145' }, supports: ['temperature', 'stream'] },
    ],
  },
  [N]: {
    endpoints: [
      { provider: 'beta', price: { prompt: '80', completion: '400' } },
      { provider: 'acme', price: { prompt: '90', completion: '400' } },
    ],
  },
  [E]: { type: 'embedding', endpoints: [{ provider: 'acme', price: { prompt: '2' } }] },
  'empty/model': { endpoints: [] },
});

function plan(over: Partial<PlanRouteInput> = {}): RoutePlan {
  return planRoute({ catalog, models: [M], stats: {}, ...over });
}

function routingError(fn: () => unknown): RoutingError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(RoutingError);
    return e as RoutingError;
  }
  throw new Error('expected a RoutingError');
}

const s = (provider: string, model = M): string => `${model}:${provider}`;

describe('planRoute: defaults', () => {
  it('keeps catalog order with no preferences', () => {
    const p = plan();
    expect(slugs(p.candidates)).toEqual([s('acme'), s('beta'), s('gamma'), s('delta')]);
    expect(p.candidates[0]).toMatchObject({ model: M, provider: { id: 'acme' } });
    expect(p.dropped).toEqual([]);
    expect(p.warnings).toEqual([]);
  });

  it('does not mutate the catalog or the inputs', () => {
    const before = JSON.stringify(catalog);
    const prefs = { order: ['gamma'], sort: 'price' as const };
    plan({ preferences: prefs, sticky: s('delta'), unhealthy: new Set([s('acme')]) });
    expect(JSON.stringify(catalog)).toBe(before);
    expect(prefs).toEqual({ order: ['gamma'], sort: 'price' });
  });
});

describe('planRoute: order / only / ignore', () => {
  it('order puts the named providers first, in that order, then the rest', () => {
    const p = plan({ preferences: { order: ['gamma', 'Beta'] } });
    expect(slugs(p.candidates)).toEqual([s('gamma'), s('beta'), s('acme'), s('delta')]);
  });

  it('order then sort for the rest', () => {
    const p = plan({ preferences: { order: ['acme'], sort: 'price' } });
    // rest by prompt+completion: gamma 150, delta 190, beta 180 -> gamma, beta, delta
    expect(slugs(p.candidates)).toEqual([s('acme'), s('gamma'), s('beta'), s('delta')]);
  });

  it('warns about providers the catalog does not know', () => {
    const p = plan({ preferences: { order: ['nope'], ignore: ['ghost'] } });
    expect(p.warnings).toEqual(["provider.order names unknown provider 'nope'", "provider.ignore names unknown provider 'ghost'"]);
    expect(slugs(p.candidates)).toHaveLength(4);
  });

  it('only keeps the listed providers', () => {
    const p = plan({ preferences: { only: ['delta', 'BETA'] } });
    expect(slugs(p.candidates)).toEqual([s('beta'), s('delta')]);
    expect(p.dropped).toEqual([
      { endpoint: s('acme'), provider: 'acme', model: M, reason: 'only', detail: "Provider 'acme' is not in provider.only" },
      { endpoint: s('gamma'), provider: 'gamma', model: M, reason: 'only', detail: "Provider 'gamma' is not in provider.only" },
    ]);
  });

  it('ignore drops the listed providers', () => {
    const p = plan({ preferences: { ignore: ['acme', 'gamma'] } });
    expect(slugs(p.candidates)).toEqual([s('beta'), s('delta')]);
    expect(p.dropped.map((d) => [d.endpoint, d.reason])).toEqual([
      [s('acme'), 'ignore'],
      [s('gamma'), 'ignore'],
    ]);
  });

  it('ignore wins over order', () => {
    const p = plan({ preferences: { order: ['acme'], ignore: ['acme'] } });
    expect(slugs(p.candidates)).toEqual([s('beta'), s('gamma'), s('delta')]);
  });
});

describe('planRoute: allow_fallbacks', () => {
  it('true (default) keeps every endpoint and uses the models array', () => {
    const p = plan({ models: [M, N], preferences: { allow_fallbacks: true } });
    expect(slugs(p.candidates)).toHaveLength(6);
  });

  it('false keeps only the first eligible endpoint of the first model', () => {
    const p = plan({ models: [M, N], preferences: { allow_fallbacks: false, ignore: ['acme'] } });
    expect(slugs(p.candidates)).toEqual([s('beta')]);
    expect(p.dropped.map((d) => [d.endpoint, d.reason])).toEqual([
      [s('acme'), 'ignore'],
      [s('gamma'), 'allow_fallbacks'],
      [s('delta'), 'allow_fallbacks'],
    ]);
    expect(p.candidates.every((c) => c.model === M)).toBe(true);
  });

  it('false with order keeps exactly the ordered providers (inline provider=X&allow_fallbacks=false)', () => {
    expect(slugs(plan({ preferences: { order: ['delta', 'gamma'], allow_fallbacks: false } }).candidates)).toEqual([
      s('delta'),
      s('gamma'),
    ]);
    expect(slugs(plan({ preferences: { order: ['delta'], allow_fallbacks: false } }).candidates)).toEqual([s('delta')]);
  });

  it('false with an ordered provider that is not eligible fails rather than routing elsewhere', () => {
    const err = routingError(() => plan({ preferences: { order: ['acme'], ignore: ['acme'], allow_fallbacks: false } }));
    expect(err.reason).toBe('no_eligible_provider');
    expect(err.candidates.map((d) => d.reason)).toEqual(['ignore', 'allow_fallbacks', 'allow_fallbacks', 'allow_fallbacks']);
  });

  it('false does not fall back to the next model', () => {
    const err = routingError(() => plan({ models: [M, N], preferences: { allow_fallbacks: false, only: ['nope'] } }));
    expect(err.reason).toBe('no_eligible_provider');
    expect(new Set(err.candidates.map((d) => d.model))).toEqual(new Set([M]));
  });
});

describe('planRoute: require_parameters and capabilities', () => {
  it('false (default): keeps every endpoint and lists what each one must drop, with per-endpoint warnings', () => {
    const p = plan({ requestedParameters: ['temperature', 'tools', 'top_k'] });
    expect(slugs(p.candidates)).toHaveLength(4);
    expect(p.unsupportedByEndpoint).toEqual({
      [s('acme')]: [],
      [s('beta')]: ['tools', 'top_k'],
      [s('gamma')]: ['top_k'],
      [s('delta')]: ['tools', 'top_k'],
    });
    expect(p.droppedParameters).toEqual(['tools', 'top_k']);
    expect(warningsFor(p, s('gamma'))).toEqual([
      `Parameter 'top_k' is not supported by ${M} via gamma and was ignored`,
    ]);
    expect(warningsFor(p, s('acme'))).toEqual([]);
    expect(parametersToDrop(p, s('beta'))).toEqual(['tools', 'top_k']);
    expect(parametersToDrop(p, 'unknown:slug')).toEqual([]);
  });

  it('true: drops endpoints lacking a requested parameter', () => {
    const p = plan({ requestedParameters: ['tools', 'logprobs'], preferences: { require_parameters: true } });
    expect(slugs(p.candidates)).toEqual([s('acme'), s('gamma')]);
    expect(p.dropped).toEqual([
      {
        endpoint: s('beta'),
        provider: 'beta',
        model: M,
        reason: 'require_parameters',
        detail: 'Does not support requested parameters: tools, logprobs',
      },
      {
        endpoint: s('delta'),
        provider: 'delta',
        model: M,
        reason: 'require_parameters',
        detail: 'Does not support requested parameters: tools, logprobs',
      },
    ]);
    expect(p.droppedParameters).toEqual([]);
  });

  it('requireCapabilities is enforced even with require_parameters false', () => {
    const p = plan({ requireCapabilities: ['logprobs'], requestedParameters: ['top_k'] });
    expect(slugs(p.candidates)).toEqual([s('acme'), s('gamma')]);
    expect(p.dropped.map((d) => d.detail)).toEqual(['Lacks required capabilities: logprobs', 'Lacks required capabilities: logprobs']);
    expect(p.unsupportedByEndpoint[s('gamma')]).toEqual(['top_k']);
  });

  it('parameters_unsupported when every endpoint lacks a parameter', () => {
    const err = routingError(() =>
      plan({ requestedParameters: ['reasoning'], requireCapabilities: ['top_k', 'x'], preferences: { require_parameters: true } }),
    );
    expect(err.reason).toBe('parameters_unsupported');
    expect(err.candidates).toHaveLength(4);
    expect(err.candidates.every((d) => d.reason === 'require_parameters')).toBe(true);
    expect(err.message).toContain('reasoning');
    expect(err.model).toBe(M);
  });
});

describe('planRoute: sort', () => {
  const stats = {
    [s('acme')]: { latencyMs: 300, throughput: 40, samples: 20, failureRate: 0 },
    [s('beta')]: { latencyMs: 100, throughput: 90, samples: 20, failureRate: 0 },
    [s('gamma')]: { samples: 0 },
    [s('delta')]: { latencyMs: 200, throughput: 120, samples: 20, failureRate: 0 },
  };

  it('price: cheapest prompt+completion first', () => {
    // acme 200, beta 180, gamma 150, delta 190
    expect(slugs(plan({ preferences: { sort: 'price' } }).candidates)).toEqual([s('gamma'), s('beta'), s('delta'), s('acme')]);
  });

  it('price: uses priceOf when given (numbers or decimal strings), stable on ties', () => {
    const byRequest = { acme: '0.3', beta: 0.3, gamma: '0.1', delta: '0.30000000000000001' } as Record<string, string | number>;
    const p = plan({ preferences: { sort: 'price' }, priceOf: (e) => byRequest[e.provider] });
    expect(slugs(p.candidates)).toEqual([s('gamma'), s('acme'), s('beta'), s('delta')]);
  });

  it('price: a priceOf that is not a number puts the endpoint last', () => {
    const p = plan({ preferences: { sort: 'price' }, priceOf: (e) => (e.provider === 'gamma' ? NaN : 1) });
    expect(slugs(p.candidates)).toEqual([s('acme'), s('beta'), s('delta'), s('gamma')]);
  });

  it('price: media models fall back to their unit price', () => {
    const media = buildCatalog({
      'img/model': {
        type: 'image',
        endpoints: [
          { provider: 'acme', price: { image: '4.5' } },
          { provider: 'beta', price: { image: '4.25' } },
          { provider: 'gamma', price: { image: '4.25', request: '0.01' } },
        ],
      },
    });
    const p = planRoute({ catalog: media, models: ['img/model'], modelType: 'image', preferences: { sort: 'price' } });
    expect(slugs(p.candidates)).toEqual(['img/model:beta', 'img/model:gamma', 'img/model:acme']);
  });

  it('latency: lowest first, endpoints without stats after', () => {
    expect(slugs(plan({ stats, preferences: { sort: 'latency' } }).candidates)).toEqual([
      s('beta'),
      s('delta'),
      s('acme'),
      s('gamma'),
    ]);
  });

  it('throughput: highest first, endpoints without stats after', () => {
    expect(slugs(plan({ stats, preferences: { sort: 'throughput' } }).candidates)).toEqual([
      s('delta'),
      s('beta'),
      s('acme'),
      s('gamma'),
    ]);
  });

  it('latency with no stats at all keeps catalog order', () => {
    expect(slugs(plan({ preferences: { sort: 'latency' } }).candidates)).toEqual([s('acme'), s('beta'), s('gamma'), s('delta')]);
  });
});

describe('planRoute: data_residency', () => {
  it('keeps providers whose region matches, case-insensitively', () => {
    const p = plan({ preferences: { data_residency: 'eu' } });
    expect(slugs(p.candidates)).toEqual([s('acme'), s('gamma')]);
    expect(p.dropped.map((d) => [d.endpoint, d.reason, d.detail])).toEqual([
      [s('beta'), 'data_residency', "Provider 'beta' region is 'us', not 'eu'"],
      [s('delta'), 'data_residency', "Provider 'delta' region is 'ru', not 'eu'"],
    ]);
  });

  it('drops providers without a region', () => {
    const c = buildCatalog({ m: { endpoints: [{ provider: 'acme' }, { provider: 'nowhere' }] } }, { nowhere: { region: undefined } });
    const p = planRoute({ catalog: c, models: ['m'], preferences: { data_residency: 'EU' } });
    expect(slugs(p.candidates)).toEqual(['m:acme']);
    expect(p.dropped[0].detail).toBe("Provider 'nowhere' region is not set, not 'eu'");
  });
});

describe('planRoute: max_price', () => {
  it.each(MAX_PRICE_FIELDS.map((f) => [f]))('ceiling %s drops pricier endpoints; a missing price counts as 0', (field) => {
    const c = buildCatalog({
      m: {
        endpoints: [
          { provider: 'acme', price: { [field]: '1.5' } },
          { provider: 'beta', price: { [field]: '1.25' } },
          { provider: 'gamma', price: {} },
        ],
      },
    });
    const p = planRoute({ catalog: c, models: ['m'], preferences: { max_price: { [field]: 1.25 } } });
    expect(slugs(p.candidates)).toEqual(['m:beta', 'm:gamma']);
    expect(p.dropped).toEqual([
      { endpoint: 'm:acme', provider: 'acme', model: 'm', reason: 'max_price', detail: `${field} price 1.5 > max_price.${field} 1.25` },
    ]);
  });

  it('compares decimals exactly: equal is allowed, a hair above is not', () => {
    const c = buildCatalog({
      m: {
        endpoints: [
          { provider: 'acme', price: { prompt: '0.3' } },
          { provider: 'beta', price: { prompt: '0.30000000000000001' } }, // a float would call this 0.3
          { provider: 'gamma', price: { prompt: '0.299999999999999999' } },
        ],
      },
    });
    const p = planRoute({ catalog: c, models: ['m'], preferences: { max_price: { prompt: 0.3 } } });
    expect(slugs(p.candidates)).toEqual(['m:acme', 'm:gamma']);
    expect(p.dropped.map((d) => d.endpoint)).toEqual(['m:beta']);
    // 0.1 + 0.2 as a JS number is 0.30000000000000004 and is taken at its word
    expect(slugs(planRoute({ catalog: c, models: ['m'], preferences: { max_price: { prompt: 0.1 + 0.2 } } }).candidates)).toEqual([
      'm:acme',
      'm:beta',
      'm:gamma',
    ]);
  });

  it('lists every exceeded ceiling and accepts decimal strings', () => {
    const p = plan({ preferences: { max_price: { prompt: '50', completion: '150.0' } } });
    expect(slugs(p.candidates)).toEqual([s('beta'), s('gamma'), s('delta')]);
    expect(p.dropped[0].detail).toBe('completion price 160 > max_price.completion 150.0');
    const q = plan({ preferences: { max_price: { prompt: 35, completion: 150 } } });
    expect(q.dropped.find((d) => d.endpoint === s('acme'))?.detail).toBe(
      'prompt price 40 > max_price.prompt 35; completion price 160 > max_price.completion 150',
    );
  });

  it('price_above_max when every drop is max_price, with the candidates', () => {
    const err = routingError(() => plan({ preferences: { max_price: { prompt: 1 } } }));
    expect(err.reason).toBe('price_above_max');
    expect(err.candidates.map((d) => d.endpoint)).toEqual([s('acme'), s('beta'), s('gamma'), s('delta')]);
    expect(err.candidates.every((d) => d.reason === 'max_price')).toBe(true);
  });

  it('no_eligible_provider when reasons are mixed', () => {
    const err = routingError(() => plan({ preferences: { max_price: { prompt: 1 }, ignore: ['acme'] } }));
    expect(err.reason).toBe('no_eligible_provider');
    expect(err.candidates.map((d) => d.reason)).toEqual(['ignore', 'max_price', 'max_price', 'max_price']);
  });
});

describe('planRoute: models array and model type', () => {
  it('concatenates endpoints model by model', () => {
    const p = plan({ models: [N, M], preferences: { only: ['acme', 'beta'] } });
    expect(slugs(p.candidates)).toEqual([s('beta', N), s('acme', N), s('acme'), s('beta')]);
    expect(p.candidates.map((c) => c.model)).toEqual([N, N, M, M]);
  });

  it('applies the preferences to every model and skips repeated ids', () => {
    const p = plan({ models: [M, N, M], preferences: { sort: 'price' } });
    expect(slugs(p.candidates)).toEqual([s('gamma'), s('beta'), s('delta'), s('acme'), s('beta', N), s('acme', N)]);
  });

  it('falls back to the next model when the first has no eligible endpoint', () => {
    const p = plan({ models: [M, N], preferences: { only: ['beta'] }, requireCapabilities: ['top_p'] });
    expect(slugs(p.candidates)).toEqual([s('beta', N)]);
  });

  it('unknown model ids are model_not_found, primary or fallback', () => {
    const a = routingError(() => plan({ models: ['nope/model'] }));
    expect(a.reason).toBe('model_not_found');
    expect(a.model).toBe('nope/model');
    expect(routingError(() => plan({ models: [M, 'nope/model'] })).reason).toBe('model_not_found');
    expect(routingError(() => plan({ models: ['constructor'] })).reason).toBe('model_not_found');
  });

  it('a primary model of the wrong type is model_not_found with a detail', () => {
    const err = routingError(() => plan({ models: [E], modelType: 'chat' }));
    expect(err.reason).toBe('model_not_found');
    expect(err.message).toBe(`Model '${E}' is an embedding model; this endpoint serves chat models`);
    expect(slugs(plan({ models: [E], modelType: ['chat', 'embedding'] }).candidates)).toEqual([s('acme', E)]);
  });

  it('a fallback model of the wrong type is dropped with reason model_type', () => {
    const p = plan({ models: [M, E], modelType: 'chat' });
    expect(slugs(p.candidates)).toHaveLength(4);
    expect(p.dropped).toEqual([
      expect.objectContaining({ endpoint: s('acme', E), model: E, reason: 'model_type' }),
    ]);
  });

  it('model_type drops do not hide the real reason', () => {
    const err = routingError(() => plan({ models: [M, E], modelType: 'chat', preferences: { max_price: { prompt: 1 } } }));
    expect(err.reason).toBe('price_above_max');
    expect(err.candidates).toHaveLength(5);
  });

  it('a model without endpoints is no_eligible_provider with no candidates', () => {
    const err = routingError(() => plan({ models: ['empty/model'] }));
    expect(err.reason).toBe('no_eligible_provider');
    expect(err.candidates).toEqual([]);
  });

  it('no model at all is an input error', () => {
    expect(() => plan({ models: [] })).toThrow(RoutingInputError);
  });
});

describe('planRoute: provider keys', () => {
  it('drops endpoints whose provider key is not configured', () => {
    const c = buildCatalog(
      { m: { endpoints: [{ provider: 'acme' }, { provider: 'nokey' }, { provider: 'local' }, { provider: 'missing' }] } },
      { nokey: { apiKey: '' }, local: { apiKeyEnv: undefined, apiKey: undefined } },
    );
    delete (c.providers as Record<string, unknown>).missing;
    const p = planRoute({ catalog: c, models: ['m'] });
    expect(slugs(p.candidates)).toEqual(['m:acme', 'm:local']);
    expect(p.dropped.map((d) => [d.endpoint, d.reason, d.detail])).toEqual([
      ['m:nokey', 'no_api_key', "Provider 'nokey' has no API key (NOKEY_API_KEY is not set)"],
      ['m:missing', 'no_api_key', "Provider 'missing' is not configured"],
    ]);
  });

  it('no_eligible_provider when no provider has a key', () => {
    const c = buildCatalog({ m: { endpoints: [{ provider: 'acme' }] } }, { acme: { apiKey: undefined } });
    const err = routingError(() => planRoute({ catalog: c, models: ['m'] }));
    expect(err.reason).toBe('no_eligible_provider');
    expect(err.candidates[0].reason).toBe('no_api_key');
  });
});

describe('planRoute: health and stickiness', () => {
  it('moves unhealthy endpoints last (explicit set or failure rate), keeping their relative order', () => {
    const p = plan({
      unhealthy: new Set([s('acme')]),
      stats: { [s('beta')]: { samples: 10, failureRate: 0.7 }, [s('gamma')]: { samples: 9, failureRate: 1 } },
    });
    expect(slugs(p.candidates)).toEqual([s('gamma'), s('delta'), s('acme'), s('beta')]);
    expect(p.dropped).toEqual([]);
  });

  it("moves an endpoint whose Retry-After has not passed last, and back once it has", () => {
    const cooling = { [s('acme')]: { samples: 1, failureRate: 1, retryAfterUntil: Date.now() + 60_000 } };
    expect(slugs(plan({ stats: cooling }).candidates)).toEqual([s('beta'), s('gamma'), s('delta'), s('acme')]);
    const passed = { [s('acme')]: { samples: 1, failureRate: 1, retryAfterUntil: Date.now() - 1 } };
    expect(slugs(plan({ stats: passed }).candidates)).toEqual([s('acme'), s('beta'), s('gamma'), s('delta')]);
  });

  it('moves unhealthy endpoints after sorted ones too, but never reorders an explicit order', () => {
    const p = plan({ preferences: { sort: 'price', order: ['delta'] }, unhealthy: new Set([s('gamma'), s('delta')]) });
    expect(slugs(p.candidates)).toEqual([s('delta'), s('beta'), s('acme'), s('gamma')]);
  });

  it('with allow_fallbacks false the first healthy endpoint is kept', () => {
    const p = plan({ preferences: { allow_fallbacks: false }, unhealthy: new Set([s('acme')]) });
    expect(slugs(p.candidates)).toEqual([s('beta')]);
  });

  it('puts the sticky endpoint first', () => {
    expect(slugs(plan({ sticky: s('gamma') }).candidates)).toEqual([s('gamma'), s('acme'), s('beta'), s('delta')]);
    expect(slugs(plan({ sticky: s('delta'), preferences: { sort: 'price' } }).candidates)[0]).toBe(s('delta'));
    expect(slugs(plan({ sticky: s('delta'), preferences: { allow_fallbacks: false } }).candidates)).toEqual([s('delta')]);
  });

  it('never puts the sticky endpoint ahead of an explicit order', () => {
    expect(slugs(plan({ sticky: s('delta'), preferences: { order: ['gamma', 'beta'] } }).candidates)).toEqual([
      s('gamma'),
      s('beta'),
      s('delta'),
      s('acme'),
    ]);
    // a sticky endpoint that is itself in order keeps its order position
    expect(slugs(plan({ sticky: s('beta'), preferences: { order: ['gamma', 'beta'] } }).candidates)).toEqual([
      s('gamma'),
      s('beta'),
      s('acme'),
      s('delta'),
    ]);
    // order naming no endpoint of this model: sticky goes first
    expect(slugs(plan({ sticky: s('delta'), preferences: { order: ['nope'] } }).candidates)[0]).toBe(s('delta'));
  });

  it('ignores a sticky endpoint that is unhealthy, ineligible, unknown or of another model', () => {
    const order = [s('acme'), s('beta'), s('gamma'), s('delta')];
    expect(slugs(plan({ sticky: s('gamma'), unhealthy: new Set([s('gamma')]) }).candidates)).toEqual([
      s('acme'),
      s('beta'),
      s('delta'),
      s('gamma'),
    ]);
    expect(slugs(plan({ sticky: s('gamma'), stats: { [s('gamma')]: { samples: 50, failureRate: 0.9 } } }).candidates)[0]).toBe(s('acme'));
    expect(slugs(plan({ sticky: s('gamma'), preferences: { ignore: ['gamma'] } }).candidates)[0]).toBe(s('acme'));
    expect(slugs(plan({ sticky: 'nope:x' }).candidates)).toEqual(order);
    expect(slugs(plan({ models: [M, N], sticky: s('acme', N) }).candidates).slice(0, 4)).toEqual(order);
  });
});

describe('planRoute: routing object values', () => {
  it.each([
    ['provider.sort', { sort: 'cheapest' }],
    ['provider.order', { order: 'acme' }],
    ['provider.only', { only: [1] }],
    ['provider.allow_fallbacks', { allow_fallbacks: 'no' }],
    ['provider.require_parameters', { require_parameters: 1 }],
    ['provider.data_residency', { data_residency: ' ' }],
    ['provider.max_price', { max_price: [] }],
    ['provider.max_price.prompt', { max_price: { prompt: 'cheap' } }],
    ['provider.max_price.image', { max_price: { image: Infinity } }],
  ])('rejects a bad %s', (field, preferences) => {
    try {
      plan({ preferences: preferences as never });
      throw new Error('expected a RoutingInputError');
    } catch (e) {
      expect(e).toBeInstanceOf(RoutingInputError);
      expect((e as RoutingInputError).field).toBe(field);
    }
  });

  it('treats null fields as absent', () => {
    expect(slugs(plan({ preferences: { order: null, sort: null, max_price: { prompt: null } } as never }).candidates)).toHaveLength(4);
  });
});
