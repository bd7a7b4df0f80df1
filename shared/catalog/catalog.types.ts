/** The catalog file (config/catalog.json), as decisions.md section 1 defines it. */

export const PROVIDER_KINDS = ['openai', 'anthropic', 'gemini', 'replicate'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

export const MODEL_TYPES = ['chat', 'embedding', 'image', 'video', 'audio', 'upscale'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];

/** Price names are the same as the `max_price` ceilings of the routing object. RUB. */
export const PRICE_FIELDS = [
  'prompt', // per 1,000,000 input tokens
  'completion', // per 1,000,000 output tokens
  'cached_prompt', // per 1,000,000 cached input tokens (optional; falls back to prompt)
  'image', // per image
  'audio', // per 1,000,000 audio tokens
  'request', // per request
  'video_per_second',
  'stt_per_minute',
  'tts_per_million_characters',
] as const;
export type PriceField = (typeof PRICE_FIELDS)[number];
/** Decimal strings or numbers in the file; kept as strings after loading so no float ever touches money. */
export type Price = Partial<Record<PriceField, string>>;

/**
 * The provider kinds with a batch API of their own (OpenAI's `/v1/batches`, Anthropic's Message Batches) and the model
 * types it takes: where an endpoint may carry `batch` prices (docs/batches.md "Provider batch APIs"). It mirrors the
 * adapters' `batch.operations` (a unit test holds the two together; the catalog does not import the adapters).
 */
export const BATCH_API_MODEL_TYPES: Readonly<Partial<Record<ProviderKind, readonly ModelType[]>>> = {
  openai: ['chat', 'embedding'],
  anthropic: ['chat'],
};

/**
 * The processing tiers a provider kind sells at prices of their own, as the request's `service_tier` names them (OpenAI:
 * https://platform.openai.com/docs/pricing, "Priority" and "Flex"): where an endpoint may carry `tiers` prices. `auto`
 * and `default` are the standard price; Batch is the `batch` prices. Chat models only.
 */
export const SERVICE_TIERS = ['priority', 'flex'] as const;
export type ServiceTier = (typeof SERVICE_TIERS)[number];
export const TIERED_PROVIDER_KINDS: Readonly<Partial<Record<ProviderKind, readonly ServiceTier[]>>> = {
  openai: ['priority', 'flex'],
};

export const MEDIA_OPERATIONS = ['extend', 'upscale_1080p', 'upscale_4k'] as const;
export type MediaOperation = (typeof MEDIA_OPERATIONS)[number];

export interface ProviderConfig {
  id: string;
  kind: ProviderKind;
  baseUrl: string;
  apiKeyEnv?: string;
  /** Resolved from `apiKeyEnv` at load time; never logged. */
  apiKey?: string;
  region?: string;
  timeoutMs: number;
  /** Cap on concurrent upstream calls from one worker process (0: none). */
  maxConcurrency?: number;
}

export interface EndpointConfig {
  /** `<model id>:<provider id>`; unique in the catalog. */
  slug: string;
  provider: string;
  upstreamModel: string;
  price: Price;
  supports: string[];
  contextLength?: number;
  maxOutputTokens?: number;
  maxDimensions?: number;
  defaultDimensions?: number;
  multimodal?: boolean;
  maxImages?: number;
  /**
   * Video and upscale endpoints: the longest output (seconds) the endpoint may produce, whatever the request asks.
   * The reservation covers it, so a provider that runs longer than asked is charged usage × price.
   */
  maxDurationSeconds?: number;
  legacy?: boolean;
  /**
   * The endpoint speaks OpenAI's Responses API (openai kind, chat models): text is sent as `POST /responses`, which
   * carries what chat completions cannot (reasoning summaries, encrypted reasoning, `verbosity`, `service_tier`).
   * Without it text goes to chat completions, which every OpenAI-compatible server speaks.
   */
  responsesApi?: boolean;
  operations?: MediaOperation[];
  /**
   * The provider's own batch API serves this endpoint at these prices (the same names as `price`, each at most the
   * regular one): a batch line routed here first goes there (docs/batches.md "Provider batch APIs").
   */
  batch?: { price: Price };
  /**
   * The provider's processing tiers this endpoint offers, at these prices (the same names as `price`, all of them): a
   * request asking for one goes upstream with it, and is charged the price of the tier the provider says served it
   * (shared/catalog/service-tiers.ts).
   */
  tiers?: Partial<Record<ServiceTier, { price: Price }>>;
}

export interface ModelConfig {
  id: string;
  displayName: string;
  type: ModelType;
  endpoints: EndpointConfig[];
}

export interface Catalog {
  providers: Record<string, ProviderConfig>;
  models: Record<string, ModelConfig>;
}
