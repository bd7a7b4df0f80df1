/**
 * What OpenAI documents per model family, as data the request mappers read (no model names in code branches): the
 * reasoning efforts a family takes, and whether it takes `verbosity`. https://platform.openai.com/docs/guides/reasoning
 * and each model's page (https://platform.openai.com/docs/models). A model the table does not know (an
 * OpenAI-compatible server's) gets the request as the caller wrote it.
 */
import type { ModelFamily } from '../mapper-utils';

/** OpenAI's effort names, least to most. */
export type OpenAIEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';

export interface OpenAIModelRules extends ModelFamily {
  /** The efforts the family takes, least to most; absent: not a reasoning model (it refuses `reasoning_effort`). */
  efforts?: readonly OpenAIEffort[];
  /** Takes `verbosity` (gpt-5 and later). */
  verbosity?: boolean;
}

export const OPENAI_MODEL_RULES: readonly OpenAIModelRules[] = [
  { prefix: 'gpt-4' },
  { prefix: 'gpt-3.5' },
  { prefix: 'o1', efforts: ['low', 'medium', 'high'] },
  { prefix: 'o3', efforts: ['low', 'medium', 'high'] },
  { prefix: 'o4-mini', efforts: ['low', 'medium', 'high'] },
  { prefix: 'gpt-5', efforts: ['minimal', 'low', 'medium', 'high'], verbosity: true },
  { prefix: 'gpt-5.1', efforts: ['none', 'low', 'medium', 'high'], verbosity: true },
  { prefix: 'gpt-5.1-codex-max', efforts: ['none', 'low', 'medium', 'high', 'xhigh'], verbosity: true },
  { prefix: 'gpt-5.2', efforts: ['none', 'low', 'medium', 'high', 'xhigh'], verbosity: true },
];

/** Our canonical effort names, least to most, as OpenAI's (`max` is the most there is: `xhigh` where offered). */
export const EFFORT_ORDER: readonly OpenAIEffort[] = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];
