import type { EndpointConfig, Price } from '../catalog/catalog.types';
import type { TokenUsage } from '../providers/provider.types';
import { Decimal, money, ZERO } from './money';

const MILLION = new Decimal(1_000_000);

/** Each catalog price's rates, parsed once: every request prices its endpoints two or three times. */
const RATES = new WeakMap<Price, Partial<Record<keyof Price, Decimal>>>();

function rate(price: Price, field: keyof Price): Decimal {
  let rates = RATES.get(price);
  if (!rates) RATES.set(price, (rates = {}));
  return (rates[field] ??= money(price[field] ?? 0));
}

/** The real cost of a text or embeddings answer: tokens at the endpoint's prices (RUB per million) plus the request fee. */
export function tokenCost(price: Price, usage: TokenUsage): Decimal {
  const cached = Math.min(usage.cachedTokens ?? 0, usage.inputTokens);
  const cachedRate = price.cached_prompt !== undefined ? rate(price, 'cached_prompt') : rate(price, 'prompt');
  return rate(price, 'prompt')
    .times(usage.inputTokens - cached)
    .plus(cachedRate.times(cached))
    .plus(rate(price, 'completion').times(usage.outputTokens))
    .dividedBy(MILLION)
    .plus(rate(price, 'request'));
}

/** Upper bound of a text request on one endpoint: every input token uncached, every allowed output token used. */
export function textBound(price: Price, inputTokens: number, maxOutputTokens: number): Decimal {
  return tokenCost(price, { inputTokens, outputTokens: maxOutputTokens });
}

/** The bound over several endpoints (a fallback may land on the dearest). */
export function maxBound(endpoints: EndpointConfig[], bound: (e: EndpointConfig) => Decimal): Decimal {
  return endpoints.reduce((m, e) => Decimal.max(m, bound(e)), ZERO);
}

/** How many output tokens a budget buys after the input, on the dearest endpoint; 0 when not even the input fits. */
export function outputTokensFor(budget: Decimal, endpoints: EndpointConfig[], inputTokens: number): number {
  let best = Number.MAX_SAFE_INTEGER;
  for (const e of endpoints) {
    const fixed = tokenCost(e.price, { inputTokens, outputTokens: 0 });
    const perToken = rate(e.price, 'completion').dividedBy(MILLION);
    if (budget.lessThan(fixed)) return 0;
    if (perToken.isZero()) continue;
    best = Math.min(best, budget.minus(fixed).dividedBy(perToken).floor().toNumber());
  }
  return best;
}

/**
 * A cheap, deliberately generous token estimate for reservations (no tokenizer on the hot path):
 * about 3 characters a token, plus a little per message. The real charge uses the provider's usage.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3) + 4;
}

/**
 * The one estimate of a text request's input tokens: what the reservation is sized for, and what a stream that
 * ended without the provider's usage is billed for.
 */
export function estimateInputTokens(req: { input: unknown; instructions?: string; tools?: unknown }): number {
  return estimateTokens(JSON.stringify(req.input) + (req.instructions ?? '') + JSON.stringify(req.tools ?? ''));
}
