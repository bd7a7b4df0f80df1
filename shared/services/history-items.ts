import type { GenerationStatus } from '../db/generated/client';
import { storedTokenCounts } from '../formats/format-utils';

/** How a stored generation shows in history: its public status, its usage in OpenAI's names, its key's short form. */

export type PublicStatus = 'completed' | 'failed' | 'pending';

export interface HistoryUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** History shows three states (interface.md): running is `pending`, cancelled is `failed` (with `isCancelled`). */
const PUBLIC_STATUS: Record<GenerationStatus, PublicStatus> = {
  pending: 'pending',
  processing: 'pending',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'failed',
};

export function publicStatus(s: GenerationStatus): PublicStatus {
  return PUBLIC_STATUS[s];
}

type Bag = Record<string, unknown>;
const firstNumber = (o: Bag, ...keys: string[]): number | undefined => {
  for (const k of keys) if (typeof o[k] === 'number' && Number.isFinite(o[k])) return o[k] as number;
  return undefined;
};

/**
 * Token usage in the OpenAI names the interface uses, from our canonical TokenUsage (`inputTokens`,
 * `outputTokens`, ...) — snake_case records are read too. Null when the generation has no token counts.
 */
export function historyUsage(usage: unknown): HistoryUsage | null {
  if (!usage || typeof usage !== 'object' || Array.isArray(usage)) return null;
  const o = usage as Bag;
  const { input: prompt, output: completion } = storedTokenCounts(usage);
  if (prompt === undefined && completion === undefined) return null;
  const total = firstNumber(o, 'totalTokens', 'total_tokens') ?? (prompt ?? 0) + (completion ?? 0);
  return { prompt_tokens: prompt ?? 0, completion_tokens: completion ?? 0, total_tokens: total };
}

/** The detail's usage: the item's three counts plus the token details and media units when recorded. */
export function historyDetailUsage(usage: unknown): Record<string, unknown> | null {
  const tokens = historyUsage(usage);
  if (!usage || typeof usage !== 'object' || Array.isArray(usage)) return null;
  const o = usage as Bag;
  const pick = (pairs: Array<[string, string[]]>): Bag | undefined => {
    const out: Bag = {};
    for (const [name, keys] of pairs) {
      const v = firstNumber(o, ...keys);
      if (v !== undefined) out[name] = v;
    }
    return Object.keys(out).length ? out : undefined;
  };
  const promptDetails = pick([
    ['cached_tokens', ['cachedTokens', 'cached_tokens']],
    ['cache_write_tokens', ['cacheWriteTokens', 'cache_write_tokens']],
    ['audio_tokens', ['audioInputTokens', 'audio_input_tokens']],
  ]);
  const completionDetails = pick([
    ['reasoning_tokens', ['reasoningTokens', 'reasoning_tokens']],
    ['audio_tokens', ['audioOutputTokens', 'audio_output_tokens']],
  ]);
  const units = pick([
    ['input_units', ['inputUnits', 'input_units']],
    ['output_units', ['outputUnits', 'output_units']],
    ['duration_seconds', ['durationSeconds', 'duration_seconds']],
  ]);
  const out: Bag = { ...(tokens ?? {}) };
  if (tokens && promptDetails) out.prompt_tokens_details = promptDetails;
  if (tokens && completionDetails) out.completion_tokens_details = completionDetails;
  Object.assign(out, units);
  return Object.keys(out).length ? out : null;
}

/** `sy_...a1B2c3` → `a1B2c3` (decisions.md section 2). */
export function apiKeyShort(label: string | null): string | null {
  return label ? label.slice(-6) : null;
}
