import type { Catalog, EndpointConfig, ModelConfig, ProviderConfig, Price, ServiceTier } from './catalog.types';

export interface ResolvedEndpoint {
  model: ModelConfig;
  endpoint: EndpointConfig;
  provider: ProviderConfig;
}

const indexes = new WeakMap<Catalog, Map<string, ResolvedEndpoint>>();

/** The endpoint behind a slug (`<model>:<provider>`), with its model and provider. */
export function endpointBySlug(catalog: Catalog, slug: string): ResolvedEndpoint | undefined {
  let index = indexes.get(catalog);
  if (!index) {
    index = new Map();
    for (const model of Object.values(catalog.models)) {
      for (const endpoint of model.endpoints) {
        const provider = catalog.providers[endpoint.provider];
        if (provider) index.set(endpoint.slug, { model, endpoint, provider });
      }
    }
    indexes.set(catalog, index);
  }
  return index.get(slug);
}

const bareIndexes = new WeakMap<Catalog, Map<string, string[]>>();

/**
 * The catalog id a model id names: itself when the catalog has it; for a bare id (no `/`, as clients that detect
 * reasoning models by name send: `o4-mini`), the one catalog model with that name after its provider prefix
 * (`openai/o4-mini`). `candidates` when several have it (ambiguous), undefined when none does.
 */
export function catalogModelId(catalog: Catalog, id: string): { id: string } | { candidates: string[] } | undefined {
  if (Object.hasOwn(catalog.models, id)) return { id };
  if (id.includes('/')) return undefined;
  let index = bareIndexes.get(catalog);
  if (!index) {
    index = new Map();
    for (const full of Object.keys(catalog.models)) {
      const slash = full.indexOf('/');
      if (slash < 0) continue;
      const bare = full.slice(slash + 1);
      index.set(bare, [...(index.get(bare) ?? []), full]);
    }
    bareIndexes.set(catalog, index);
  }
  const named = index.get(id) ?? [];
  if (named.length === 0) return undefined;
  return named.length === 1 ? { id: named[0] } : { candidates: named };
}

/** A catalog model's display name (a history listing's `modelDisplayName`); the id itself once the catalog has it no more. */
export function modelDisplayName(catalog: Catalog, id: string): string {
  return (Object.hasOwn(catalog.models, id) && catalog.models[id]!.displayName) || id;
}

/**
 * Processing tiers (OpenAI's `service_tier`: https://platform.openai.com/docs/api-reference/chat/create#service_tier):
 * what a request asks for, whether an endpoint sells it, and at what price. Routing sends a tier only to an endpoint
 * whose catalog prices it (docs/decisions.md "Routing"); the reservation is bounded at the price of the tier asked for,
 * the charge is at the price of the tier the provider says served the call (docs/decisions.md "Money").
 */

/** The `service_tier` values that ask for standard processing: `auto` (the provider project's default tier) and `default`. */
export const STANDARD_TIERS: readonly string[] = ['auto', 'default'];

/** The tier a request asks for that is not standard processing (`priority`, `flex`, or a value no catalog prices), else undefined. */
export function askedTier(serviceTier: string | null | undefined): string | undefined {
  return serviceTier == null || STANDARD_TIERS.includes(serviceTier) ? undefined : serviceTier;
}

/** Whether the endpoint sells `tier` at a price of its own (its catalog `tiers`). */
export function offersTier(endpoint: EndpointConfig, tier: string | undefined): boolean {
  return tier !== undefined && endpoint.tiers !== undefined && Object.hasOwn(endpoint.tiers, tier);
}

/**
 * The endpoint's price for `tier`: that tier's where the catalog prices it, else the standard price (`default`, `auto`,
 * no tier, or one the endpoint does not sell: it was not sent).
 */
export function tierPrice(endpoint: EndpointConfig, tier: string | null | undefined): Price {
  return (tier != null && offersTier(endpoint, tier) && endpoint.tiers![tier as ServiceTier]?.price) || endpoint.price;
}
