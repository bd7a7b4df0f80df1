/**
 * What Anthropic documents per model and for extended thinking, as data the request mapper reads (no model names in
 * code branches). https://docs.claude.com/en/docs/about-claude/models/overview and
 * https://docs.claude.com/en/docs/build-with-claude/extended-thinking
 */
import type { ModelFamily } from '../mapper-utils';

export interface AnthropicModelRules extends ModelFamily {
  /** Messages of role `system` may stand in the middle of `messages` (mid-conversation system blocks). */
  midConversationSystem?: boolean;
}

/** Families that differ from the default (none of them takes mid-conversation system messages before claude-opus-4-8). */
export const ANTHROPIC_MODEL_RULES: readonly AnthropicModelRules[] = [
  { prefix: 'claude-opus-4-8', midConversationSystem: true },
  { prefix: 'claude-opus-5', midConversationSystem: true },
  { prefix: 'claude-sonnet-5', midConversationSystem: true },
];

/** Anthropic's smallest thinking budget (`ThinkingConfigEnabled.budget_tokens`: "Must be ≥1024 and less than max_tokens"). */
export const MIN_THINKING_BUDGET = 1024;

/** Our effort names → `thinking.budget_tokens`. */
export const THINKING_BUDGET: ReadonlyMap<string, number> = new Map([
  ['minimal', 1024],
  ['low', 2048],
  ['medium', 8192],
  ['high', 16384],
  ['max', 32000],
]);

/**
 * With extended thinking on: "Thinking isn't compatible with temperature or top_k modifications as well as forced tool
 * use"; top_p may be set between 0.95 and 1 (extended-thinking#feature-compatibility).
 */
export const THINKING_CONSTRAINTS = { temperature: 1, minTopP: 0.95 } as const;

/**
 * The output rate Anthropic's SDK assumes when it sizes a non-streaming call (128,000 tokens an hour:
 * anthropic-sdk-typescript `calculateNonstreamingTimeout`): a call without a limit of its own is given no more output
 * than fits in the provider's timeout at that rate, so it ends before we give up on it.
 */
export const NON_STREAMING_TOKENS_PER_HOUR = 128_000;
