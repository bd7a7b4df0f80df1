/**
 * What Google documents per Gemini model family, as data the request mapper reads (no model names in code branches):
 * the range of `thinkingConfig.thinkingBudget`, and whether thinking can be turned off.
 * https://ai.google.dev/gemini-api/docs/thinking#set-budget
 */
import type { ModelFamily } from '../mapper-utils';

export interface GeminiModelRules extends ModelFamily {
  /** The budgets the family takes; absent: the model does not think (no `thinkingConfig` is sent). */
  thinkingBudget?: { min: number; max: number; canDisable: boolean };
}

export const GEMINI_MODEL_RULES: readonly GeminiModelRules[] = [
  { prefix: 'gemini-2.0' },
  { prefix: 'gemini-2.5-pro', thinkingBudget: { min: 128, max: 32768, canDisable: false } },
  { prefix: 'gemini-2.5-flash', thinkingBudget: { min: 1, max: 24576, canDisable: true } },
  { prefix: 'gemini-2.5-flash-lite', thinkingBudget: { min: 512, max: 24576, canDisable: true } },
  { prefix: 'gemini-3', thinkingBudget: { min: 128, max: 32768, canDisable: false } },
];

/** Our effort names → a budget, before the family's range applies (`max`: the family's most). */
export const THINKING_BUDGET: ReadonlyMap<string, number> = new Map([
  ['minimal', 512],
  ['low', 1024],
  ['medium', 8192],
  ['high', 24576],
  ['max', Number.POSITIVE_INFINITY],
]);
