import type { Catalog, EndpointConfig, ModelConfig, ProviderConfig } from './catalog.types';

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
