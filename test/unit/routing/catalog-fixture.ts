import type {
  Catalog,
  EndpointConfig,
  ModelConfig,
  ModelType,
  Price,
  ProviderConfig,
} from '../../../shared/catalog/catalog.types';

export interface EndpointSpec {
  provider: string;
  price?: Price;
  supports?: string[];
}

export interface ModelSpecFixture {
  type?: ModelType;
  endpoints: EndpointSpec[];
}

/** Providers every fixture knows; override or add through `providers`. */
export const DEFAULT_PROVIDERS: Record<string, Partial<ProviderConfig>> = {
  acme: { region: 'eu' },
  beta: { region: 'us' },
  gamma: { region: 'EU' },
  delta: { region: 'ru' },
};

/** Small catalog builder: endpoints get slug `<model>:<provider>` and a key-configured provider by default. */
export function buildCatalog(
  models: Record<string, ModelSpecFixture>,
  providers: Record<string, Partial<ProviderConfig>> = {},
): Catalog {
  const allProviders: Record<string, ProviderConfig> = {};
  for (const [id, p] of Object.entries({ ...DEFAULT_PROVIDERS, ...providers })) {
    allProviders[id] = {
      id,
      kind: 'openai',
      baseUrl: `https://${id}.example.com/v1`,
      apiKeyEnv: `${id.toUpperCase()}_API_KEY`,
      apiKey: `key-${id}`,
      timeoutMs: 60000,
      ...p,
    };
  }
  const allModels: Record<string, ModelConfig> = {};
  for (const [id, m] of Object.entries(models)) {
    allModels[id] = {
      id,
      displayName: id,
      type: m.type ?? 'chat',
      endpoints: m.endpoints.map(
        (e): EndpointConfig => ({
          slug: `${id}:${e.provider}`,
          provider: e.provider,
          upstreamModel: id.split('/').pop() ?? id,
          price: e.price ?? { prompt: '10', completion: '20' },
          supports: e.supports ?? ['temperature', 'top_p', 'tools', 'stream'],
        }),
      ),
    };
  }
  return { providers: allProviders, models: allModels };
}

export const slugs = (list: Array<{ endpoint: { slug: string } }>): string[] => list.map((c) => c.endpoint.slug);
