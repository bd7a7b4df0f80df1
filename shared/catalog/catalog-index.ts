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
