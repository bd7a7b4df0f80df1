/**
 * Processing tiers (OpenAI's `service_tier`: https://platform.openai.com/docs/api-reference/chat/create#service_tier):
 * what a request asks for, whether an endpoint sells it, and at what price. Routing sends a tier only to an endpoint
 * whose catalog prices it (docs/decisions.md "Routing"); the reservation is bounded at the price of the tier asked for,
 * the charge is at the price of the tier the provider says served the call (docs/decisions.md "Money").
 */
import type { EndpointConfig, Price, ServiceTier } from './catalog.types';

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
