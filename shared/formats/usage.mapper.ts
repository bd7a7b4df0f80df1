/**
 * Canonical token usage + the settled cost → the public `usage` objects (interface.md "Response object":
 * `usage` fields). Money arrives as decimal strings and leaves as JSON numbers rounded to 6 places.
 */
import type { TokenUsage } from '../providers/provider.types';
import { moneyJson } from './format-utils';

export interface UsageCost {
  /** Everything charged for the request, RUB decimal string. */
  totalRub: string;
  /** The model's part of it. */
  inferenceRub: string;
  /** Server-side tools (web search, ...); zero when absent. */
  serverToolsRub?: string;
}

export interface UsageExtras {
  /** `usage.plugins`, e.g. `{masker: {operations, latency_ms, cost_rub}, total_cost_rub}`. */
  plugins?: Record<string, unknown>;
  /** Set when a plugin failed after the model answered (the answer is returned as the model gave it). */
  pluginPostProcessError?: boolean;
}

export interface InputTokensDetails {
  cached_tokens: number;
  cache_write_tokens: number;
  audio_tokens: number;
  video_tokens: number;
}

export interface OutputTokensDetails {
  reasoning_tokens: number;
  audio_tokens: number;
  image_tokens: number;
  accepted_prediction_tokens: number;
  rejected_prediction_tokens: number;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: InputTokensDetails;
  completion_tokens_details: OutputTokensDetails;
  cost_rub: number;
  cost: number;
  plugins?: Record<string, unknown>;
  plugin_post_process_error?: boolean;
}

/** `usage` of a Response object: OpenAI's Responses names, the chat names as aliases, and the cost. */
export interface PublicUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  input_tokens_details: InputTokensDetails;
  prompt_tokens_details: InputTokensDetails;
  output_tokens_details: OutputTokensDetails;
  completion_tokens_details: OutputTokensDetails;
  server_tool_use: { web_search_requests: number };
  server_tool_use_details: { web_search_requests: number; tool_calls_requested: number; tool_calls_executed: number; steps: number };
  cost_rub: number;
  cost: number;
  cost_details: { inference_cost_rub: number; server_tools_cost_rub: number };
  plugins?: Record<string, unknown>;
  plugin_post_process_error?: boolean;
}

export interface EmbeddingUsage {
  prompt_tokens: number;
  total_tokens: number;
  cost_rub: number;
  cost: number;
}

function inputDetails(u: TokenUsage): InputTokensDetails {
  return {
    cached_tokens: u.cachedTokens ?? 0,
    cache_write_tokens: u.cacheWriteTokens ?? 0,
    audio_tokens: u.audioInputTokens ?? 0,
    video_tokens: 0,
  };
}

function outputDetails(u: TokenUsage): OutputTokensDetails {
  return {
    reasoning_tokens: u.reasoningTokens ?? 0,
    audio_tokens: u.audioOutputTokens ?? 0,
    image_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0,
  };
}

function withExtras<T extends object>(usage: T, extras: UsageExtras | undefined): T {
  const out: T & { plugins?: Record<string, unknown>; plugin_post_process_error?: boolean } = usage;
  if (extras?.plugins !== undefined) out.plugins = extras.plugins;
  if (extras?.pluginPostProcessError !== undefined) out.plugin_post_process_error = extras.pluginPostProcessError;
  return out;
}

/** `inputTokens` already includes cached and cache-write tokens (the canonical convention). */
export function publicUsage(u: TokenUsage, cost: UsageCost, extras?: UsageExtras): PublicUsage {
  const input = inputDetails(u);
  const output = outputDetails(u);
  const total = moneyJson(cost.totalRub);
  return withExtras<PublicUsage>(
    {
      input_tokens: u.inputTokens,
      output_tokens: u.outputTokens,
      total_tokens: u.inputTokens + u.outputTokens,
      prompt_tokens: u.inputTokens,
      completion_tokens: u.outputTokens,
      input_tokens_details: input,
      prompt_tokens_details: { ...input },
      output_tokens_details: output,
      completion_tokens_details: { ...output },
      server_tool_use: { web_search_requests: 0 },
      server_tool_use_details: { web_search_requests: 0, tool_calls_requested: 0, tool_calls_executed: 0, steps: 0 },
      cost_rub: total,
      cost: total,
      cost_details: {
        inference_cost_rub: moneyJson(cost.inferenceRub),
        server_tools_cost_rub: moneyJson(cost.serverToolsRub ?? '0'),
      },
    },
    extras,
  );
}

/** `usage` of a chat completion (and of the last chunk of a stream with `include_usage`). */
export function chatUsage(u: TokenUsage, cost: Pick<UsageCost, 'totalRub'>, extras?: UsageExtras): ChatUsage {
  const total = moneyJson(cost.totalRub);
  return withExtras<ChatUsage>(
    {
      prompt_tokens: u.inputTokens,
      completion_tokens: u.outputTokens,
      total_tokens: u.inputTokens + u.outputTokens,
      prompt_tokens_details: inputDetails(u),
      completion_tokens_details: outputDetails(u),
      cost_rub: total,
      cost: total,
    },
    extras,
  );
}

/** `usage` of an embedding list. */
export function embeddingUsage(inputTokens: number, totalRub: string): EmbeddingUsage {
  const total = moneyJson(totalRub);
  return { prompt_tokens: inputTokens, total_tokens: inputTokens, cost_rub: total, cost: total };
}

/**
 * The input and output tokens a generation's stored usage counts: our TokenUsage names, or the snake_case ones a
 * record may carry (media usage, batch lines). Undefined where it counts none.
 */
export function storedTokenCounts(usage: unknown): { input?: number; output?: number } {
  if (!usage || typeof usage !== 'object' || Array.isArray(usage)) return {};
  const u = usage as Record<string, unknown>;
  const first = (...keys: string[]) => keys.map((k) => u[k]).find((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return { input: first('inputTokens', 'input_tokens', 'prompt_tokens'), output: first('outputTokens', 'output_tokens', 'completion_tokens') };
}
