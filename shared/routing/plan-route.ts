import type { EndpointConfig, ModelConfig, ModelType, PriceField, ProviderConfig } from '../catalog/catalog.types';
import { compareMoney, money, parseMoney } from '../money';
import { askedTier, offersTier, tierPrice } from '../catalog/catalog-index';
import { isUnhealthy } from './endpoint-stats';
import { ignoredParameterWarnings } from './route-parameters';
import { RoutingError, RoutingInputError, type RoutingErrorReason } from './routing-errors';
import {
  MAX_PRICE_FIELDS,
  PROVIDER_SORTS,
  type Candidate,
  type DropReason,
  type DroppedCandidate,
  type EndpointStats,
  type MaxPriceField,
  type PlanRouteInput,
  type ProviderPreferences,
  type ProviderSort,
  type RoutePlan,
} from './routing.types';

/** The routing object with defaults applied and provider names lower-cased. */
export interface ResolvedPreferences {
  order: string[];
  only?: Set<string>;
  ignore: Set<string>;
  allowFallbacks: boolean;
  requireParameters: boolean;
  sort?: ProviderSort;
  dataResidency?: string;
  maxPrice: Array<{ field: MaxPriceField; ceiling: string | number }>;
}

/** Apply defaults (`allow_fallbacks` true, `require_parameters` false) and check values; throws RoutingInputError. */
export function resolvePreferences(preferences: ProviderPreferences | undefined): ResolvedPreferences {
  const p = preferences ?? {};
  const names = (field: 'order' | 'only' | 'ignore'): string[] | undefined => {
    const v: unknown = p[field];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new RoutingInputError(`provider.${field}`, `provider.${field} must be an array of strings`);
    }
    return [...new Set(v.map(normName))];
  };
  const bool = (field: 'allow_fallbacks' | 'require_parameters', dflt: boolean): boolean => {
    const v: unknown = p[field];
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'boolean') throw new RoutingInputError(`provider.${field}`, `provider.${field} must be a boolean`);
    return v;
  };
  const sort: unknown = p.sort ?? undefined;
  if (sort !== undefined && !(PROVIDER_SORTS as readonly unknown[]).includes(sort)) {
    throw new RoutingInputError('provider.sort', `provider.sort must be one of ${PROVIDER_SORTS.join(', ')}`);
  }
  const residency: unknown = p.data_residency ?? undefined;
  if (residency !== undefined && (typeof residency !== 'string' || residency.trim() === '')) {
    throw new RoutingInputError('provider.data_residency', 'provider.data_residency must be a non-empty string');
  }
  const maxPrice: ResolvedPreferences['maxPrice'] = [];
  const mp: unknown = p.max_price ?? undefined;
  if (mp !== undefined) {
    if (typeof mp !== 'object' || Array.isArray(mp) || mp === null) {
      throw new RoutingInputError('provider.max_price', 'provider.max_price must be an object');
    }
    const record = mp as Record<string, unknown>;
    for (const field of MAX_PRICE_FIELDS) {
      const ceiling = record[field];
      if (ceiling === undefined || ceiling === null) continue;
      if ((typeof ceiling !== 'number' && typeof ceiling !== 'string') || !parseMoney(ceiling)) {
        throw new RoutingInputError(`provider.max_price.${field}`, `provider.max_price.${field} must be a number`);
      }
      maxPrice.push({ field, ceiling });
    }
  }
  const only = names('only');
  return {
    order: names('order') ?? [],
    only: only ? new Set(only) : undefined,
    ignore: new Set(names('ignore') ?? []),
    allowFallbacks: bool('allow_fallbacks', true),
    requireParameters: bool('require_parameters', false),
    sort: sort as ProviderSort | undefined,
    dataResidency: typeof residency === 'string' ? normName(residency) : undefined,
    maxPrice,
  };
}

/**
 * Choose the endpoints to try, in order, for a request (see routing.types.ts for the input).
 * Throws RoutingError (`model_not_found`, `no_eligible_provider`, `price_above_max`, `parameters_unsupported`)
 * and RoutingInputError (bad routing object values, no model).
 */
export function planRoute(input: PlanRouteInput): RoutePlan {
  const { catalog } = input;
  const prefs = resolvePreferences(input.preferences);
  const requested = [...new Set(input.requestedParameters ?? [])];
  const required = [...new Set(input.requireCapabilities ?? [])];
  const stats = input.stats ?? {};
  const tier = askedTier(input.serviceTier);
  // Whether an endpoint takes a parameter: its catalog `supports`, or for a tier its catalog `tiers`.
  const takes = (endpoint: EndpointConfig, p: string): boolean => (p === 'service_tier' ? offersTier(endpoint, tier) : endpoint.supports.includes(p));
  const types = input.modelType === undefined ? undefined : ([] as ModelType[]).concat(input.modelType);

  const modelIds = [...new Set(input.models)];
  if (modelIds.length === 0) throw new RoutingInputError('model', 'No model given');
  for (const id of modelIds) {
    if (typeof id !== 'string' || !Object.hasOwn(catalog.models, id)) {
      throw new RoutingError('model_not_found', `Model '${String(id)}' does not exist`, [], String(id));
    }
  }
  const typeMismatch = (model: ModelConfig): string | undefined =>
    types && !types.includes(model.type)
      ? `Model '${model.id}' is ${/^[aeiou]/.test(model.type) ? 'an' : 'a'} ${model.type} model; this endpoint serves ${types.join(' or ')} models`
      : undefined;
  const primaryMismatch = typeMismatch(catalog.models[modelIds[0]]);
  if (primaryMismatch) throw new RoutingError('model_not_found', primaryMismatch, [], modelIds[0]);

  const warnings: string[] = [];
  for (const field of ['order', 'only', 'ignore'] as const) {
    const list = field === 'order' ? prefs.order : field === 'only' ? prefs.only : prefs.ignore;
    for (const name of list ?? []) {
      if (!hasProvider(catalog.providers, name)) warnings.push(`provider.${field} names unknown provider '${name}'`);
    }
  }

  const used = prefs.allowFallbacks ? modelIds : modelIds.slice(0, 1);
  const dropped: DroppedCandidate[] = [];
  let candidates: Candidate[] = [];

  used.forEach((id, modelIndex) => {
    const model = catalog.models[id];
    const mismatch = typeMismatch(model);
    const eligible: Candidate[] = [];
    for (const endpoint of model.endpoints) {
      const provider = findProvider(catalog.providers, endpoint.provider);
      const drop = (reason: DropReason, detail: string): void => {
        dropped.push({ endpoint: endpoint.slug, provider: endpoint.provider, model: id, reason, detail });
      };
      if (mismatch) {
        drop('model_type', mismatch);
        continue;
      }
      const why = checkEndpoint(endpoint, provider, prefs, requested, required, { tier, takes });
      if (why) {
        drop(why.reason, why.detail);
        continue;
      }
      eligible.push({ model: id, endpoint, provider: provider as ProviderConfig });
    }
    const ordered = orderEndpoints(eligible, model, prefs, stats, input, tier);
    if (modelIndex === 0 && input.sticky !== undefined) applySticky(ordered, input.sticky, prefs, stats, input.unhealthy, tier);
    candidates.push(...ordered);
  });

  if (!prefs.allowFallbacks && candidates.length > 0) {
    const keep =
      prefs.order.length > 0
        ? candidates.filter((c) => prefs.order.includes(normName(c.endpoint.provider)))
        : candidates.slice(0, 1);
    const detail =
      prefs.order.length > 0
        ? `allow_fallbacks is false: only the providers in provider.order (${prefs.order.join(', ')}) are tried`
        : `allow_fallbacks is false: only '${keep[0]?.endpoint.slug}' is tried`;
    for (const c of candidates) {
      if (!keep.includes(c)) {
        dropped.push({
          endpoint: c.endpoint.slug,
          provider: c.endpoint.provider,
          model: c.model,
          reason: 'allow_fallbacks',
          detail,
        });
      }
    }
    candidates = keep;
  }

  if (candidates.length === 0) {
    throw noCandidateError(used, dropped, [...new Set([...(prefs.requireParameters ? requested : []), ...required])]);
  }

  const unsupportedByEndpoint: Record<string, string[]> = {};
  const warningsByEndpoint: Record<string, string[]> = {};
  const union = new Set<string>();
  for (const c of candidates) {
    const missing = requested.filter((p) => !takes(c.endpoint, p));
    unsupportedByEndpoint[c.endpoint.slug] = missing;
    warningsByEndpoint[c.endpoint.slug] = ignoredParameterWarnings(missing, c.model, c.endpoint.provider);
    for (const p of missing) union.add(p);
  }

  return {
    candidates,
    dropped,
    droppedParameters: [...union].sort(),
    unsupportedByEndpoint,
    warnings,
    warningsByEndpoint,
  };
}

/**
 * Default `sort: price` key, compared field by field: prompt + completion first, then the per-unit
 * prices of media models. A missing price counts as 0. The prices are those of the tier asked for where the endpoint
 * sells it.
 */
export function defaultPriceKey(endpoint: EndpointConfig, tier?: string): string[] {
  const price = tierPrice(endpoint, tier);
  const p = (f: PriceField): string => price[f] ?? '0';
  return [
    money(p('prompt')).plus(p('completion')).toFixed(),
    p('image'),
    p('video_per_second'),
    p('audio'),
    p('stt_per_minute'),
    p('tts_per_million_characters'),
    p('request'),
  ];
}

// ---------------------------------------------------------------------------------------------

function normName(name: string): string {
  return name.trim().toLowerCase();
}

function findProvider(providers: Record<string, ProviderConfig>, id: string): ProviderConfig | undefined {
  if (Object.hasOwn(providers, id)) return providers[id];
  const key = Object.keys(providers).find((k) => normName(k) === normName(id));
  return key === undefined ? undefined : providers[key];
}

function hasProvider(providers: Record<string, ProviderConfig>, normalized: string): boolean {
  return Object.keys(providers).some((k) => normName(k) === normalized);
}

function checkEndpoint(
  endpoint: EndpointConfig,
  provider: ProviderConfig | undefined,
  prefs: ResolvedPreferences,
  requested: string[],
  required: string[],
  asked: { tier?: string; takes: (endpoint: EndpointConfig, p: string) => boolean },
): { reason: DropReason; detail: string } | undefined {
  const name = normName(endpoint.provider);
  if (!provider) return { reason: 'no_api_key', detail: `Provider '${endpoint.provider}' is not configured` };
  if (provider.apiKeyEnv && !provider.apiKey) {
    return { reason: 'no_api_key', detail: `Provider '${endpoint.provider}' has no API key (${provider.apiKeyEnv} is not set)` };
  }
  if (prefs.ignore.has(name)) return { reason: 'ignore', detail: `Provider '${endpoint.provider}' is in provider.ignore` };
  if (prefs.only && !prefs.only.has(name)) {
    return { reason: 'only', detail: `Provider '${endpoint.provider}' is not in provider.only` };
  }
  if (prefs.dataResidency !== undefined) {
    const region = provider.region === undefined ? undefined : normName(provider.region);
    if (region !== prefs.dataResidency) {
      return {
        reason: 'data_residency',
        detail: `Provider '${endpoint.provider}' region is ${region === undefined ? 'not set' : `'${provider.region}'`}, not '${prefs.dataResidency}'`,
      };
    }
  }
  const over: string[] = [];
  for (const { field, ceiling } of prefs.maxPrice) {
    const price = tierPrice(endpoint, asked.tier)[field] ?? '0';
    if (compareMoney(price, ceiling) > 0) over.push(`${field} price ${price} > max_price.${field} ${String(ceiling)}`);
  }
  if (over.length > 0) return { reason: 'max_price', detail: over.join('; ') };
  if (prefs.requireParameters) {
    const missing = requested.filter((p) => !asked.takes(endpoint, p)).map((p) => (p === 'service_tier' ? `service_tier '${asked.tier}'` : p));
    if (missing.length > 0) {
      return { reason: 'require_parameters', detail: `Does not support requested parameters: ${missing.join(', ')}` };
    }
  }
  const lacking = required.filter((p) => !asked.takes(endpoint, p));
  if (lacking.length > 0) {
    return { reason: 'require_parameters', detail: `Lacks required capabilities: ${lacking.join(', ')}` };
  }
  return undefined;
}

function statsOf(stats: Record<string, EndpointStats>, slug: string): EndpointStats | undefined {
  return Object.hasOwn(stats, slug) ? stats[slug] : undefined;
}

function orderEndpoints(
  eligible: Candidate[],
  model: ModelConfig,
  prefs: ResolvedPreferences,
  stats: Record<string, EndpointStats>,
  input: PlanRouteInput,
  tier: string | undefined,
): Candidate[] {
  const named: Candidate[] = [];
  for (const name of prefs.order) {
    for (const c of eligible) if (normName(c.endpoint.provider) === name) named.push(c);
  }
  let rest = eligible.filter((c) => !named.includes(c));

  if (prefs.sort === 'price') {
    const keys = new Map<Candidate, Array<string | number> | undefined>();
    for (const c of rest) {
      const key = input.priceOf ? [input.priceOf(c.endpoint, model)] : defaultPriceKey(c.endpoint, tier);
      keys.set(c, key.every((k) => parseMoney(k) !== undefined) ? key : undefined);
    }
    rest = stableSort(rest, (a, b) => comparePriceKeys(keys.get(a), keys.get(b)));
  } else if (prefs.sort === 'latency') {
    rest = stableSort(rest, (a, b) =>
      compareOptional(statsOf(stats, a.endpoint.slug)?.latencyMs, statsOf(stats, b.endpoint.slug)?.latencyMs, 1),
    );
  } else if (prefs.sort === 'throughput') {
    rest = stableSort(rest, (a, b) =>
      compareOptional(statsOf(stats, a.endpoint.slug)?.throughput, statsOf(stats, b.endpoint.slug)?.throughput, -1),
    );
  }
  // Endpoints selling the tier asked for go before those that would serve it at the standard tier (stable).
  if (tier !== undefined) rest = [...rest.filter((c) => offersTier(c.endpoint, tier)), ...rest.filter((c) => !offersTier(c.endpoint, tier))];
  // Known-bad endpoints go last (stable); an explicit `order` is left as the caller gave it.
  const sick = (c: Candidate): boolean => isUnhealthy(c.endpoint.slug, statsOf(stats, c.endpoint.slug), input.unhealthy);
  rest = [...rest.filter((c) => !sick(c)), ...rest.filter(sick)];
  return [...named, ...rest];
}

/**
 * Move the sticky endpoint to the front of the part after the `order`-named endpoints; not one without the tier asked
 * for ahead of one that sells it.
 */
function applySticky(
  ordered: Candidate[],
  sticky: string,
  prefs: ResolvedPreferences,
  stats: Record<string, EndpointStats>,
  unhealthy: ReadonlySet<string> | undefined,
  tier: string | undefined,
): void {
  const at = ordered.findIndex((c) => c.endpoint.slug === sticky);
  if (at < 0) return;
  const c = ordered[at];
  if (isUnhealthy(sticky, statsOf(stats, sticky), unhealthy)) return;
  if (tier !== undefined && !offersTier(c.endpoint, tier) && ordered.some((x) => offersTier(x.endpoint, tier))) return;
  if (prefs.order.includes(normName(c.endpoint.provider))) return;
  const firstFree = ordered.findIndex((x) => !prefs.order.includes(normName(x.endpoint.provider)));
  ordered.splice(at, 1);
  ordered.splice(firstFree, 0, c);
}

function stableSort<T>(list: T[], cmp: (a: T, b: T) => number): T[] {
  return list
    .map((item, index) => ({ item, index }))
    .sort((a, b) => cmp(a.item, b.item) || a.index - b.index)
    .map((x) => x.item);
}

/** Present values first (ascending when dir is 1, descending when -1), missing ones after. */
function compareOptional(a: number | undefined, b: number | undefined, dir: 1 | -1): number {
  const ha = a !== undefined && Number.isFinite(a);
  const hb = b !== undefined && Number.isFinite(b);
  if (ha && hb) return ((a as number) - (b as number)) * dir;
  return ha ? -1 : hb ? 1 : 0;
}

function comparePriceKeys(a: Array<string | number> | undefined, b: Array<string | number> | undefined): number {
  if (!a || !b) return a ? -1 : b ? 1 : 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareMoney(a[i], b[i]);
    if (c !== 0) return c;
  }
  return 0;
}

function noCandidateError(
  models: string[],
  dropped: DroppedCandidate[],
  params: string[],
): RoutingError {
  const relevant = dropped.filter((d) => d.reason !== 'model_type');
  const all = (reasons: DropReason[]): boolean =>
    relevant.length > 0 && relevant.every((d) => reasons.includes(d.reason));
  const what = models.length === 1 ? `model '${models[0]}'` : `models ${models.map((m) => `'${m}'`).join(', ')}`;
  let reason: RoutingErrorReason;
  let message: string;
  if (all(['max_price'])) {
    reason = 'price_above_max';
    message = `Every endpoint of ${what} costs more than provider.max_price allows`;
  } else if (all(['require_parameters'])) {
    reason = 'parameters_unsupported';
    message = `No endpoint of ${what} supports all required parameters${params.length ? ` (${params.join(', ')})` : ''}`;
  } else {
    reason = 'no_eligible_provider';
    message =
      dropped.length === 0
        ? `No endpoint serves ${what}`
        : `No endpoint of ${what} satisfies the routing constraints`;
  }
  return new RoutingError(reason, message, dropped, models[0]);
}
