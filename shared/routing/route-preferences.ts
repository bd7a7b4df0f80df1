/** The provider routing object (a request's `provider`) checked, with its defaults applied: what planRoute reads. */
import { parseMoney } from '../money';
import { RoutingInputError } from './routing-errors';
import { MAX_PRICE_FIELDS, PROVIDER_SORTS, type MaxPriceField, type ProviderPreferences, type ProviderSort } from './routing.types';

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

/** A provider name as routing compares it (trimmed, lower case). */
export function normName(name: string): string {
  return name.trim().toLowerCase();
}
