import type { EndpointConfig, Price } from '../catalog/catalog.types';
import type { TokenUsage, InputItem, TokenizerFamily } from '../providers/provider.types';
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

/** A price's rates over their common power of ten, worked out once per catalog price (tokenCost reads SCALED first). */
function scaledPrice(price: Price): ScaledPrice {
  const prompt = scaled(rate(price, 'prompt'));
  const cached = price.cached_prompt !== undefined ? scaled(rate(price, 'cached_prompt')) : prompt;
  const completion = scaled(rate(price, 'completion'));
  const request = scaled(rate(price, 'request'));
  const scale = Math.max(prompt.scale, cached.scale, completion.scale, request.scale);
  const at = (r: Scaled) => r.units * 10n ** BigInt(scale - r.scale);
  const p = { prompt: at(prompt), cached: at(cached), completion: at(completion), request: at(request), scale };
  SCALED.set(price, p);
  return p;
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
  const p = SCALED.get(price) ?? scaledPrice(price);
  const units = p.prompt * BigInt(usage.inputTokens - cached) + p.cached * BigInt(cached) + p.completion * BigInt(usage.outputTokens) + p.request * 1_000_000n;
  // `units / 10^scale` as a Decimal, exactly: its digits with the point put in.
  const scale = p.scale + 6;
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  const text = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return new Decimal(negative ? `-${text}` : text);
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

/**
 * The one estimate of a text request's input tokens: what the reservation is sized for, and what a stream that
 * ended without the provider's usage is billed for. Images and files by reference count at an allowance each
 * (IMAGE_INPUT_TOKENS, FILE_INPUT_TOKENS) besides their characters: a request of many image URLs reserved a few tokens
 * apiece, and its provider's charge then went past the balance and the limits (what no reservation holds is not
 * collected).
 */
export function estimateInputTokens(req: { input: unknown; instructions?: string; tools?: unknown }): number {
  let attachments = 0;
  if (Array.isArray(req.input)) {
    for (const item of req.input as Array<{ content?: unknown }>) {
      if (!Array.isArray(item.content)) continue;
      for (const part of item.content as Array<{ type?: string; file_url?: string }>) {
        if (part.type === 'input_image') attachments += IMAGE_INPUT_TOKENS;
        // A file sent inline is counted by its characters already (base64: more than its tokens).
        else if (part.type === 'input_file' && part.file_url !== undefined) attachments += FILE_INPUT_TOKENS;
      }
    }
  }
  return estimateTokens(JSON.stringify(req.input) + (req.instructions ?? '') + JSON.stringify(req.tools ?? '')) + attachments;
}

/**
 * An honest count of tokens where a provider reported none (decisions.md section 4): what a stream cut before its
 * provider's usage is charged for. Not the reservation's estimate (pricing.ts `estimateInputTokens`, about 3 characters
 * a token over the request's JSON, generous on purpose): a cut stream is charged what was sent and delivered, as close
 * as we can count it, and never more than its whole answer could cost.
 *
 * The count is one function (`tokenWeight`) to swap for a real tokenizer. Until then it is a calibrated estimate per
 * script, measured against OpenAI's o200k_base (js-tiktoken 1.0.21): English prose 4.07 characters a token, Markdown
 * 3.42, TypeScript 4.24, Russian 3.96, Chinese 1.45. The weights below count at most those tokens (Latin 4.25 characters
 * a token, Cyrillic 4, CJK 1.5): a cut stream is not charged for tokens it may not have had. Anthropic's and Gemini's tokenizers are not
 * published; their providers report the input at the stream's start (Anthropic's `message_start`, Gemini's every chunk),
 * which is used instead (`producedUsage`), so the estimate counts only what they streamed.
 */

/** Tokens per character by script: Latin letters, digits, punctuation and spaces; Cyrillic; CJK and kana; anything else. */
interface Weights {
  latin: number;
  cyrillic: number;
  cjk: number;
  other: number;
}

const O200K: Weights = { latin: 1 / 4.25, cyrillic: 1 / 4, cjk: 1 / 1.5, other: 1 / 2 };
const WEIGHTS: Record<TokenizerFamily, Weights> = { openai: O200K, anthropic: O200K, gemini: O200K };

/** A typical image (OpenAI: 85 tokens at low detail; a 1024×1024 image at high detail, 765) and a typical file (about two pages). */
const IMAGE_TOKENS = { low: 85, typical: 765 };
const FILE_TOKENS = 1_500;

/** The tokens `text` weighs, unrounded: counts of consecutive deltas add up without a rounding per delta. */
export function tokenWeight(text: string, family: TokenizerFamily): number {
  const w = WEIGHTS[family];
  let tokens = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x250) tokens += w.latin;
    else if (c >= 0x400 && c < 0x530) tokens += w.cyrillic;
    else if ((c >= 0x3040 && c < 0xa000) || (c >= 0xac00 && c < 0xd7b0) || (c >= 0xf900 && c < 0xfb00)) tokens += w.cjk;
    // A surrogate pair (an emoji, a rare ideograph) is one character.
    else if (c >= 0xd800 && c < 0xdc00) {
      tokens += w.other;
      i++;
    } else tokens += w.other;
  }
  return tokens;
}

/** A weight in whole tokens (rounded up, past the float error of adding many fractions). */
export function wholeTokens(weight: number): number {
  return Math.max(0, Math.ceil(weight - 1e-6));
}

/** An honest count of the tokens of `text` in the family's tokenizer. */
export function countTokens(text: string, family: TokenizerFamily): number {
  return wholeTokens(tokenWeight(text, family));
}

/**
 * The tokens a text request's input is, as its provider would count them, at most: the texts of its messages,
 * instructions and tool calls, its tool definitions, a typical image or file each (their sizes are not ours to see).
 * What a provider adds per message (OpenAI: 3, and 3 to prime the reply) is left out: a short stream cut near its end
 * must not cost more than the same stream finished, whatever its provider counts.
 */
export function countInputTokens(req: { input: InputItem[]; instructions?: string; tools?: unknown[] }, family: TokenizerFamily): number {
  let weight = tokenWeight(req.instructions ?? '', family) + (req.tools?.length ? tokenWeight(JSON.stringify(req.tools), family) : 0);
  let fixed = 0;
  for (const item of req.input) {
    if (item.type === 'function_call') weight += tokenWeight(item.name + item.arguments, family);
    else if (item.type === 'function_call_output') weight += tokenWeight(item.output, family);
    else if (item.type === 'reasoning') for (const part of item.summary) weight += tokenWeight(part.text, family);
    else
      for (const part of item.content) {
        if (part.type === 'input_text' || part.type === 'output_text') weight += tokenWeight(part.text, family);
        else if (part.type === 'input_image') fixed += Math.min(part.detail === 'low' ? IMAGE_TOKENS.low : IMAGE_TOKENS.typical, IMAGE_INPUT_TOKENS);
        else fixed += Math.min(FILE_TOKENS, FILE_INPUT_TOKENS);
      }
  }
  return wholeTokens(weight) + fixed;
}

/** What a stream's provider reported before it ended, field by field (Anthropic: the input at `message_start`). */
export type UsageSoFar = Partial<TokenUsage>;

/**
 * The usage a stream's generation is charged: its provider's, when it reported it by the end; otherwise what it
 * reported so far (the input of a stream cut after `message_start`), and for the rest an honest count of the
 * request's input and of the output delivered.
 */
export function producedUsage(p: { final?: TokenUsage; soFar?: UsageSoFar; outputWeight: number; request: Parameters<typeof countInputTokens>[0]; family: TokenizerFamily }): TokenUsage {
  if (p.final) return p.final;
  const { soFar } = p;
  const usage: TokenUsage = {
    inputTokens: soFar?.inputTokens ?? countInputTokens(p.request, p.family),
    outputTokens: soFar?.outputTokens ?? wholeTokens(p.outputWeight),
  };
  if (soFar?.cachedTokens) usage.cachedTokens = soFar.cachedTokens;
  if (soFar?.cacheWriteTokens) usage.cacheWriteTokens = soFar.cacheWriteTokens;
  return usage;
}
