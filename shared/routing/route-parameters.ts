/**
 * What a route plan means for the request's parameters: which to leave out of the call to an endpoint, and the one
 * wording of the warnings about them.
 */
import type { RoutePlan } from './routing.types';

/** The one wording of "this endpoint does not take that parameter; it was left out of the call". */
export function ignoredParameterWarnings(parameters: readonly string[], model: string, provider: string): string[] {
  return parameters.map((p) => `Parameter '${p}' is not supported by ${model} via ${provider} and was ignored`);
}

/** The same for a value the endpoint does not take of a parameter it does (an unknown `quality`). */
export function ignoredValueWarnings(values: ReadonlyArray<readonly [parameter: string, value: unknown]>, model: string, provider: string): string[] {
  return values.map(([p, v]) => `Value ${JSON.stringify(v)} of parameter '${p}' is not supported by ${model} via ${provider} and was ignored`);
}

/** The same for a value the endpoint does not offer, sent as the nearest one it does (an image `size`). */
export function substitutedValueWarnings(values: ReadonlyArray<readonly [parameter: string, value: unknown, used: unknown]>, model: string, provider: string): string[] {
  return values.map(([p, v, used]) => `Value ${JSON.stringify(v)} of parameter '${p}' is not offered by ${model} via ${provider}: ${JSON.stringify(used)} was used instead`);
}

/** Plan-wide warnings plus those of the endpoint that answered. */
export function warningsFor(plan: RoutePlan, slug: string): string[] {
  return [...plan.warnings, ...(plan.warningsByEndpoint[slug] ?? [])];
}

/** Request parameters to leave out of the upstream call to this endpoint. */
export function parametersToDrop(plan: RoutePlan, slug: string): string[] {
  return plan.unsupportedByEndpoint[slug] ?? [];
}

/** The parameters no candidate endpoint takes: dropped (with a warning) whichever answers, so a reply does not echo them. */
export function parametersIgnored(plan: RoutePlan): string[] {
  return plan.droppedParameters.filter((p) => plan.candidates.every((c) => parametersToDrop(plan, c.endpoint.slug).includes(p)));
}
