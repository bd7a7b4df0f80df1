/**
 * The providers' documented per-model rules that their request types cannot say (fakes/definitions/README.md): which
 * parameters a model family refuses, its reasoning efforts and thinking budgets, and what extended thinking forbids.
 * The fakes judge by these tables, written from the providers' documentation (links beside each); the adapters keep
 * their own tables (shared/providers/<kind>/model-rules.ts), so a mistake in one is caught by the other.
 * A family is matched by the longest prefix of the model name.
 */

/** The rules of the family with the longest prefix of `model`, or undefined. */
export function familyOf<T extends { prefix: string }>(table: readonly T[], model: string): T | undefined {
  let best: T | undefined;
  for (const f of table) if (model.startsWith(f.prefix) && (!best || f.prefix.length > best.prefix.length)) best = f;
  return best;
}

// ---------- where a definition is stricter than its API ----------

/**
 * Fields a definition requires that the real API does without, by definition set and schema (request-check.ts takes
 * them off the schema's `required`). OpenAI's OpenAPI document requires a reasoning item's `id`, yet the API takes
 * reasoning items without one (the encrypted content names the item it was issued for): OpenAI's own Codex CLI sends
 * them so with `store: false` (https://github.com/openai/codex, codex-rs/protocol/src/models.rs: `ResponseItem::Reasoning`
 * does not serialise its `id`).
 */
export const NOT_REQUIRED: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {
  openai: { ReasoningItem: ['id'] },
};

// ---------- OpenAI ----------

export interface OpenAIFamily {
  prefix: string;
  /** `reasoning_effort` / `reasoning.effort` values the family takes; absent: not a reasoning model (refuses both). */
  efforts?: readonly string[];
  /** Sampling parameters the family refuses (reasoning models): https://platform.openai.com/docs/guides/reasoning */
  refuses?: readonly string[];
}

const REASONING_REFUSES = ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'logprobs', 'top_logprobs', 'logit_bias', 'max_tokens'];

/**
 * https://platform.openai.com/docs/guides/reasoning and each model's page (https://platform.openai.com/docs/models):
 * o-series low/medium/high; gpt-5 adds minimal; gpt-5.1 takes none instead of minimal; gpt-5.1-codex-max and gpt-5.2
 * add xhigh.
 */
export const OPENAI_FAMILIES: readonly OpenAIFamily[] = [
  { prefix: 'gpt-4' },
  { prefix: 'gpt-3.5' },
  { prefix: 'o1', efforts: ['low', 'medium', 'high'], refuses: REASONING_REFUSES },
  { prefix: 'o3', efforts: ['low', 'medium', 'high'], refuses: REASONING_REFUSES },
  { prefix: 'o4-mini', efforts: ['low', 'medium', 'high'], refuses: REASONING_REFUSES },
  { prefix: 'gpt-5', efforts: ['minimal', 'low', 'medium', 'high'], refuses: REASONING_REFUSES },
  { prefix: 'gpt-5.1', efforts: ['none', 'low', 'medium', 'high'], refuses: REASONING_REFUSES },
  { prefix: 'gpt-5.1-codex-max', efforts: ['none', 'low', 'medium', 'high', 'xhigh'], refuses: REASONING_REFUSES },
  { prefix: 'gpt-5.2', efforts: ['none', 'low', 'medium', 'high', 'xhigh'], refuses: REASONING_REFUSES },
];

// ---------- Anthropic ----------

export interface AnthropicFamily {
  prefix: string;
  /** The most `max_tokens` takes: https://docs.claude.com/en/docs/about-claude/models/overview */
  maxOutputTokens: number;
  /** Messages of role `system` (and `mid_conv_system` blocks) in `messages`: claude-opus-4-8 and later. */
  midConversationSystem?: boolean;
}

export const ANTHROPIC_FAMILIES: readonly AnthropicFamily[] = [
  { prefix: 'claude-3-5-haiku', maxOutputTokens: 8192 },
  { prefix: 'claude-3-7-sonnet', maxOutputTokens: 64000 },
  { prefix: 'claude-sonnet-4', maxOutputTokens: 64000 },
  { prefix: 'claude-haiku-4', maxOutputTokens: 64000 },
  { prefix: 'claude-opus-4', maxOutputTokens: 32000 },
  { prefix: 'claude-opus-4-5', maxOutputTokens: 64000 },
  { prefix: 'claude-opus-4-6', maxOutputTokens: 128000 },
  { prefix: 'claude-opus-4-8', maxOutputTokens: 128000, midConversationSystem: true },
  { prefix: 'claude-opus-5', maxOutputTokens: 128000, midConversationSystem: true },
  { prefix: 'claude-sonnet-5', maxOutputTokens: 128000, midConversationSystem: true },
];

/**
 * What extended thinking (`thinking.type: enabled`) forbids, in Anthropic's words:
 * https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility — "Thinking isn't compatible
 * with temperature or top_k modifications as well as forced tool use"; top_p may be set between 0.95 and 1; the
 * budget must be below max_tokens (MessageCreateParams `ThinkingConfigEnabled.budget_tokens`: "Must be ≥1024 and less
 * than max_tokens").
 */
export function anthropicThinkingRefusal(body: Record<string, unknown>): string | undefined {
  const thinking = body.thinking as { type?: string; budget_tokens?: number } | undefined;
  if (thinking?.type !== 'enabled') return undefined;
  if (body.temperature !== undefined && body.temperature !== 1) {
    return '`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking';
  }
  if (body.top_k !== undefined) return '`top_k` must be unset when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking';
  if (typeof body.top_p === 'number' && body.top_p < 0.95) {
    return '`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking';
  }
  const choice = (body.tool_choice as { type?: string } | undefined)?.type;
  if (choice === 'any' || choice === 'tool') return 'Thinking may not be enabled when tool_choice forces tool use.';
  if (typeof thinking.budget_tokens === 'number' && typeof body.max_tokens === 'number' && thinking.budget_tokens >= body.max_tokens) {
    return '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size';
  }
  return undefined;
}

// ---------- Gemini ----------

export interface GeminiFamily {
  prefix: string;
  /** `thinkingConfig.thinkingBudget` range (-1: dynamic, always taken); absent: the model does not think. */
  budget?: { min: number; max: number; canDisable: boolean };
}

/** https://ai.google.dev/gemini-api/docs/thinking#set-budget */
export const GEMINI_FAMILIES: readonly GeminiFamily[] = [
  { prefix: 'gemini-2.0' },
  { prefix: 'gemini-2.5-pro', budget: { min: 128, max: 32768, canDisable: false } },
  { prefix: 'gemini-2.5-flash', budget: { min: 1, max: 24576, canDisable: true } },
  { prefix: 'gemini-2.5-flash-lite', budget: { min: 512, max: 24576, canDisable: true } },
  { prefix: 'gemini-3', budget: { min: 128, max: 32768, canDisable: false } },
];

/** Gemini's refusal of a `thinkingConfig` for this model, in its words, or undefined. */
export function geminiThinkingRefusal(model: string, thinking: Record<string, unknown> | undefined): string | undefined {
  if (!thinking) return undefined;
  const family = familyOf(GEMINI_FAMILIES, model);
  if (!family) return undefined;
  if (!family.budget) return thinking.thinkingBudget !== undefined || thinking.includeThoughts === true ? 'Thinking is not supported for this model.' : undefined;
  const budget = thinking.thinkingBudget;
  if (typeof budget !== 'number' || budget === -1) return undefined;
  const { min, max, canDisable } = family.budget;
  if (budget === 0) return canDisable ? undefined : 'Budget 0 is invalid. This model only works in thinking mode.';
  if (budget < min || budget > max) return `The thinking budget ${budget} is invalid. Please choose a value between ${canDisable ? 0 : min} and ${max}.`;
  return undefined;
}
