import type { EndpointConfig, Price } from '../catalog/catalog.types';
import type { TokenUsage } from '../providers/provider.types';
import { Decimal, money, ZERO } from '../money';

const MILLION = new Decimal(1_000_000);

/** Each catalog price's rates, parsed once: every request prices its endpoints two or three times. */
const RATES = new WeakMap<Price, Partial<Record<keyof Price, Decimal>>>();

function rate(price: Price, field: keyof Price): Decimal {
  let rates = RATES.get(price);
  if (!rates) RATES.set(price, (rates = {}));
  return (rates[field] ??= money(price[field] ?? 0));
}

/** A rate as an exact integer over a power of ten: `units / 10^scale`. */
interface Scaled {
  units: bigint;
  scale: number;
}

/** A price's token rates and request fee over one common power of ten (RUB per million tokens, and RUB). */
interface ScaledPrice {
  prompt: bigint;
  cached: bigint;
  completion: bigint;
  request: bigint;
  scale: number;
}

const SCALED = new WeakMap<Price, ScaledPrice>();

function scaled(d: Decimal): Scaled {
  const [whole, fraction = ''] = d.toFixed().split('.');
  return { units: BigInt(whole + fraction), scale: fraction.length };
}

function scaledPrice(price: Price): ScaledPrice {
  let p = SCALED.get(price);
  if (p) return p;
  const prompt = scaled(rate(price, 'prompt'));
  const cached = price.cached_prompt !== undefined ? scaled(rate(price, 'cached_prompt')) : prompt;
  const completion = scaled(rate(price, 'completion'));
  const request = scaled(rate(price, 'request'));
  const scale = Math.max(prompt.scale, cached.scale, completion.scale, request.scale);
  const at = (r: Scaled) => r.units * 10n ** BigInt(scale - r.scale);
  p = { prompt: at(prompt), cached: at(cached), completion: at(completion), request: at(request), scale };
  SCALED.set(price, p);
  return p;
}

/** `units / 10^scale` as a Decimal, exactly. */
function fromScaled(units: bigint, scale: number): Decimal {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return new Decimal(negative ? `-${text}` : text);
}

/**
 * The real cost of a text or embeddings answer: tokens at the endpoint's prices (RUB per million) plus the request fee.
 * Worked out exactly in integers over the price's power of ten (the sum and the division by a million are exact, and
 * one Decimal is made at the end): the same value decimal.js's arithmetic gives wherever it has the digits for it
 * (test/unit/billing/pricing.test.ts), in about a third of the time (bench/rounds/07-cheap-flush.md).
 */
export function tokenCost(price: Price, usage: TokenUsage): Decimal {
  const cached = Math.min(usage.cachedTokens ?? 0, usage.inputTokens);
  if (!Number.isSafeInteger(usage.inputTokens) || !Number.isSafeInteger(cached) || !Number.isSafeInteger(usage.outputTokens)) return decimalTokenCost(price, usage);
  const p = scaledPrice(price);
  const units = p.prompt * BigInt(usage.inputTokens - cached) + p.cached * BigInt(cached) + p.completion * BigInt(usage.outputTokens) + p.request * 1_000_000n;
  return fromScaled(units, p.scale + 6);
}

/** tokenCost in decimal.js arithmetic: token counts that are not whole numbers (never from a provider's usage). */
export function decimalTokenCost(price: Price, usage: TokenUsage): Decimal {
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
 * What an image is reserved for besides its characters: about the most one image costs among the providers' models
 * (OpenAI's gpt-4.1-mini at full detail: 1,536 patches × 1.62; Anthropic's largest image about 1,600). Its URL is a
 * few characters of the request, its tokens are not.
 */
export const IMAGE_INPUT_TOKENS = 2_500;
/** What a file given by reference (a PDF by URL) is reserved for: about ten pages. */
export const FILE_INPUT_TOKENS = 10_000;

/** The images and files of the input's messages, at IMAGE_INPUT_TOKENS and FILE_INPUT_TOKENS each. */
function attachmentTokens(input: unknown): number {
  if (!Array.isArray(input)) return 0;
  let tokens = 0;
  for (const item of input as Array<{ content?: unknown }>) {
    if (!Array.isArray(item.content)) continue;
    for (const part of item.content as Array<{ type?: string; file_url?: string }>) {
      if (part.type === 'input_image') tokens += IMAGE_INPUT_TOKENS;
      // A file sent inline is counted by its characters already (base64: more than its tokens).
      else if (part.type === 'input_file' && part.file_url !== undefined) tokens += FILE_INPUT_TOKENS;
    }
  }
  return tokens;
}

/**
 * The one estimate of a text request's input tokens: what the reservation is sized for, and what a stream that
 * ended without the provider's usage is billed for. Images and files by reference count at an allowance each: a
 * request of many image URLs reserved a few tokens apiece, and its provider's charge then went past the balance and
 * the limits (what no reservation holds is not collected).
 */
export function estimateInputTokens(req: { input: unknown; instructions?: string; tools?: unknown }): number {
  return estimateTokens(JSON.stringify(req.input) + (req.instructions ?? '') + JSON.stringify(req.tools ?? '')) + attachmentTokens(req.input);
}
