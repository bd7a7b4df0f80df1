import type { EndpointConfig, ModelConfig, ModelType, PriceField, ProviderConfig } from '../catalog/catalog.types';

/** `max_price` ceilings: every price field except `cached_prompt`. */
export const MAX_PRICE_FIELDS = [
  'prompt',
  'completion',
  'image',
  'audio',
  'request',
  'video_per_second',
  'stt_per_minute',
  'tts_per_million_characters',
] as const satisfies readonly PriceField[];
export type MaxPriceField = (typeof MAX_PRICE_FIELDS)[number];

/** RUB ceilings, in the units of the catalog prices. Numbers from JSON; decimal strings are accepted too. */
export type MaxPrice = Partial<Record<MaxPriceField, number | string>>;

export const PROVIDER_SORTS = ['price', 'latency', 'throughput'] as const;
export type ProviderSort = (typeof PROVIDER_SORTS)[number];

/** The provider routing object (field `provider` of generation requests). */
export interface ProviderPreferences {
  /** Providers tried first, in this order. */
  order?: string[];
  /** Only these providers may serve the request. */
  only?: string[];
  /** These providers never serve the request. */
  ignore?: string[];
  /** Default true. False: only the first eligible endpoint (or the endpoints named in `order`) of the first model. */
  allow_fallbacks?: boolean;
  /** Default false. True: endpoints lacking a requested parameter are dropped instead of the parameter. */
  require_parameters?: boolean;
  sort?: ProviderSort;
  /** Region code compared (case-insensitively) with the provider's `region`. */
  data_residency?: string;
  max_price?: MaxPrice;
}

/** Rolling statistics of one endpoint (see `foldStats`). */
export interface EndpointStats {
  /** Recent time to first token, ms. */
  latencyMs?: number;
  /** Recent output tokens per second. */
  throughput?: number;
  /** Share of failed attempts in the window, 0..1. */
  failureRate?: number;
  /** Attempts in the window. */
  samples: number;
  /** Epoch ms: the endpoint's latest `Retry-After` (not called before then unless nothing else can answer). */
  retryAfterUntil?: number;
}

export interface Candidate {
  /** Model id (catalog key). */
  model: string;
  endpoint: EndpointConfig;
  provider: ProviderConfig;
}

export const DROP_REASONS = [
  'ignore',
  'only',
  'max_price',
  'data_residency',
  'require_parameters',
  'model_type',
  'no_api_key',
  'unhealthy',
  'allow_fallbacks',
] as const;
export type DropReason = (typeof DROP_REASONS)[number];

export interface DroppedCandidate {
  /** Endpoint slug. */
  endpoint: string;
  provider: string;
  model: string;
  reason: DropReason;
  detail: string;
}

export interface RoutePlan {
  /** In try order: every endpoint of the first model, then of the second, and so on. */
  candidates: Candidate[];
  dropped: DroppedCandidate[];
  /** Union of `unsupportedByEndpoint` (sorted). Use `unsupportedByEndpoint[slug]` for the endpoint actually called. */
  droppedParameters: string[];
  /** For every candidate slug: requested parameters the endpoint does not support (to drop from the upstream call). */
  unsupportedByEndpoint: Record<string, string[]>;
  /** Warnings that hold whichever endpoint answers. */
  warnings: string[];
  /** Warnings that hold only when that endpoint answers (see `warningsFor`). */
  warningsByEndpoint: Record<string, string[]>;
}

export interface PlanRouteInput {
  catalog: { models: Record<string, ModelConfig>; providers: Record<string, ProviderConfig> };
  /** Primary model first, then the `models` fallback array. */
  models: string[];
  preferences?: ProviderPreferences;
  /** Names of the optional parameters the request uses ('temperature', 'tools', 'top_k', ...). */
  requestedParameters?: string[];
  /** Expected model type(s); a model of another type is `model_not_found`. */
  modelType?: ModelType | readonly ModelType[];
  /** By endpoint slug. */
  stats?: Record<string, EndpointStats>;
  /** Slug of the endpoint that served the last request with the same prompt_cache_key / session_id. */
  sticky?: string;
  /** Slugs known to be failing (circuit open, ...). */
  unhealthy?: ReadonlySet<string>;
  /** Hard requirements, enforced whatever `require_parameters` says (e.g. 'logprobs'). */
  requireCapabilities?: string[];
  /**
   * The request's `service_tier` (shared/catalog/service-tiers.ts). A tier other than standard is the parameter
   * `service_tier`, taken by the endpoints whose catalog `tiers` price it; they come first, and `max_price` and
   * `sort: price` read their price for it.
   */
  serviceTier?: string;
  /** Price estimate used by `sort: price` (decimal string or number; compared exactly). */
  priceOf?: (endpoint: EndpointConfig, model: ModelConfig) => number | string;
}
