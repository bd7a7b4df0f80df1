import type { EndpointConfig, ModelConfig, ModelType, PriceField, ProviderConfig } from '../catalog/catalog.types';
import { compareMoney, money, parseMoney } from '../money';
import { normName, resolvePreferences, type ResolvedPreferences } from './route-preferences';
import { askedTier, offersTier, tierPrice } from '../catalog/catalog-index';
import { isUnhealthy } from './endpoint-stats';
import { ignoredParameterWarnings } from './route-parameters';
import { RoutingError, RoutingInputError, type RoutingErrorReason } from './routing-errors';
import {
  type Candidate,
  type DropReason,
  type DroppedCandidate,
  type EndpointStats,
  type PlanRouteInput,
  type RoutePlan,
} from './routing.types';

/**
 * Choose the endpoints to try, in order, for a request (see routing.types.ts for the input): `chooseEndpoints`, then
 * `planFromChoices` with the request's health. Throws RoutingError (`model_not_found`, `no_eligible_provider`,
 * `price_above_max`, `parameters_unsupported`) and RoutingInputError (bad routing object values, no model).
 */
export function planRoute(input: PlanRouteInput): RoutePlan {
  return planFromChoices(chooseEndpoints(input), input);
}

/**
 * What a route plan takes from the request and the catalog alone, the same for every request that asks alike
 * (api/services/route-planner.ts keeps it per request shape): the models tried, their eligible endpoints in their order
 * before health, what was dropped and why, the warnings. Read-only once made: plans share it.
 */
export interface RouteChoices {
  prefs: ResolvedPreferences;
  tier?: string;
  requested: string[];
  required: string[];
  /** The models tried: the first alone when fallbacks are off. */
  models: string[];
  /** Per model tried, its eligible endpoints: those `order` names (as it names them), then the rest. */
  eligible: Array<{ named: Candidate[]; rest: Candidate[] }>;
  dropped: DroppedCandidate[];
  warnings: string[];
  /** For every eligible endpoint: its requested parameters it does not take, and the warnings about them. */
  unsupportedByEndpoint: Record<string, string[]>;
  warningsByEndpoint: Record<string, string[]>;
}

/** The part of `planRoute` that reads no statistics: throws as it does for a bad request or an unknown model. */
export function chooseEndpoints(input: Omit<PlanRouteInput, 'stats' | 'sticky' | 'unhealthy'>): RouteChoices {
  const { catalog } = input;
  const prefs = resolvePreferences(input.preferences);
  const requested = [...new Set(input.requestedParameters ?? [])];
  const required = [...new Set(input.requireCapabilities ?? [])];
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
  const choices: RouteChoices = { prefs, tier, requested, required, models: used, eligible: [], dropped: [], warnings, unsupportedByEndpoint: {}, warningsByEndpoint: {} };
  for (const id of used) {
    const model = catalog.models[id];
    const mismatch = typeMismatch(model);
    const eligible: Candidate[] = [];
    for (const endpoint of model.endpoints) {
      const provider = findProvider(catalog.providers, endpoint.provider);
      const why = mismatch ? { reason: 'model_type' as const, detail: mismatch } : checkEndpoint(endpoint, provider, prefs, requested, required, { tier, takes });
      if (why) {
        choices.dropped.push({ endpoint: endpoint.slug, provider: endpoint.provider, model: id, reason: why.reason, detail: why.detail });
        continue;
      }
      eligible.push({ model: id, endpoint, provider: provider as ProviderConfig });
      const missing = requested.filter((p) => !takes(endpoint, p));
      choices.unsupportedByEndpoint[endpoint.slug] = missing;
      choices.warningsByEndpoint[endpoint.slug] = ignoredParameterWarnings(missing, id, endpoint.provider);
    }
    choices.eligible.push(orderEndpoints(eligible, model, prefs, input, tier));
  }
  return choices;
}

/**
 * The plan of one request from its choices: the statistics' sorts, known-bad endpoints last, the sticky endpoint
 * first, then `allow_fallbacks: false`. Throws RoutingError when no endpoint is left.
 */
export function planFromChoices(choices: RouteChoices, health: Pick<PlanRouteInput, 'stats' | 'sticky' | 'unhealthy'>): RoutePlan {
  const { prefs, tier } = choices;
  const stats = health.stats ?? {};
  const dropped = [...choices.dropped];
  let candidates: Candidate[] = [];
  choices.eligible.forEach(({ named, rest }, modelIndex) => {
    if (prefs.sort === 'latency' || prefs.sort === 'throughput') {
      // Sorted within the tier groups chooseEndpoints made: as sorting first and grouping after (both are stable).
      const field = prefs.sort === 'latency' ? 'latencyMs' : 'throughput';
      const tierLast = (c: Candidate): number => (tier !== undefined && !offersTier(c.endpoint, tier) ? 1 : 0);
      rest = stableSort(rest, (a, b) =>
        tierLast(a) - tierLast(b) || compareOptional(statsOf(stats, a.endpoint.slug)?.[field], statsOf(stats, b.endpoint.slug)?.[field], field === 'latencyMs' ? 1 : -1),
      );
    }
    // Known-bad endpoints go last (stable); an explicit `order` is left as the caller gave it.
    const healthy: Candidate[] = [];
    const sick: Candidate[] = [];
    for (const c of rest) {
      const slug = c.endpoint.slug;
      (isUnhealthy(slug, Object.hasOwn(stats, slug) ? stats[slug] : undefined, health.unhealthy) ? sick : healthy).push(c);
    }
    const ordered = [...named, ...healthy, ...sick];
    if (modelIndex === 0 && health.sticky !== undefined) applySticky(ordered, health.sticky, prefs, stats, health.unhealthy, tier);
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
    const params = [...new Set([...(prefs.requireParameters ? choices.requested : []), ...choices.required])];
    throw noCandidateError(choices.models, dropped, params);
  }

  const unsupportedByEndpoint: Record<string, string[]> = {};
  const warningsByEndpoint: Record<string, string[]> = {};
  const union = new Set<string>();
  for (const c of candidates) {
    const slug = c.endpoint.slug;
    unsupportedByEndpoint[slug] = choices.unsupportedByEndpoint[slug];
    warningsByEndpoint[slug] = choices.warningsByEndpoint[slug];
    for (const p of unsupportedByEndpoint[slug]) union.add(p);
  }

  return {
    candidates,
    dropped,
    droppedParameters: [...union].sort(),
    unsupportedByEndpoint,
    warnings: [...choices.warnings],
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

/**
 * An eligible list in its order before health: those `order` names first (as it names them), then the rest sorted by
 * price (`sort: price`) and with the endpoints selling the tier asked for ahead of the others (stable). The statistics'
 * sorts and known-bad endpoints are planFromChoices's.
 */
function orderEndpoints(
  eligible: Candidate[],
  model: ModelConfig,
  prefs: ResolvedPreferences,
  input: Pick<PlanRouteInput, 'priceOf'>,
  tier: string | undefined,
): { named: Candidate[]; rest: Candidate[] } {
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
  }
  if (tier !== undefined) rest = [...rest.filter((c) => offersTier(c.endpoint, tier)), ...rest.filter((c) => !offersTier(c.endpoint, tier))];
  return { named, rest };
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
