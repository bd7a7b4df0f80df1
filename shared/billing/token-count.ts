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
import { FILE_INPUT_TOKENS, IMAGE_INPUT_TOKENS } from './pricing';
import type { InputItem, TokenUsage } from '../providers/provider.types';

/** Whose tokenizer a provider's models use, by its catalog kind (an OpenAI-compatible provider counts as OpenAI). */
export type TokenizerFamily = 'openai' | 'anthropic' | 'gemini';

export function tokenizerFamily(providerKind: string): TokenizerFamily {
  return providerKind === 'anthropic' || providerKind === 'gemini' ? providerKind : 'openai';
}

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
