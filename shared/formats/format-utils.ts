/** Small pure helpers shared by the public-format mappers: money in JSON, log-probabilities, reasoning. */
import type { TextRequest, TokenLogprob, TokenUsage } from '../providers/provider.types';
import { Decimal, parseMoney } from '../money';
import { askedTier } from '../catalog/catalog-index';
import type { PublicReasoningEffort, ResponsesReasoning } from '../schemas/responses.schema';

/**
 * A money amount as replies show it: a JSON number rounded to 6 places (decisions.md section 4), half away from zero,
 * exactly (decimal arithmetic, no float math before the final number).
 */
export function moneyJson(value: string | number): number {
  const d = parseMoney(value);
  if (!d) throw new TypeError(`Not a decimal number: ${String(value)}`);
  const rounded = d.toDecimalPlaces(6, Decimal.ROUND_HALF_UP);
  return rounded.isZero() ? 0 : Number(rounded.toFixed());
}

export interface PublicLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] }>;
}

const utf8Bytes = (token: string): number[] => Array.from(Buffer.from(token, 'utf8'));

/** Canonical log-probabilities → OpenAI's shape (the same in chat `logprobs.content` and Responses `output_text.logprobs`). */
export function publicLogprobs(logprobs: readonly TokenLogprob[]): PublicLogprob[] {
  return logprobs.map((l) => ({
    token: l.token,
    logprob: l.logprob,
    bytes: utf8Bytes(l.token),
    top_logprobs: l.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: utf8Bytes(t.token) })),
  }));
}

type CanonicalReasoning = NonNullable<TextRequest['reasoning']>;
type CanonicalEffort = NonNullable<CanonicalReasoning['effort']>;

/**
 * Public effort levels → canonical ones. `none` turns reasoning off; `xhigh` (OpenAI's level above `high`) is
 * our `max`, the most an adapter can give.
 */
export const REASONING_EFFORT_MAP: ReadonlyMap<PublicReasoningEffort, CanonicalEffort | 'off'> = new Map([
  ['none', 'off'],
  ['minimal', 'minimal'],
  ['low', 'low'],
  ['medium', 'medium'],
  ['high', 'high'],
  ['xhigh', 'max'],
  ['max', 'max'],
] as const);

/** The public `reasoning` object (Responses, or chat's `reasoning` + `reasoning_effort`) → canonical; undefined when empty. */
export function canonicalReasoning(r: ResponsesReasoning | null | undefined): CanonicalReasoning | undefined {
  if (!r) return undefined;
  const out: CanonicalReasoning = {};
  const effort = r.effort ?? r.effort_level ?? undefined;
  if (effort !== undefined) {
    const mapped = REASONING_EFFORT_MAP.get(effort);
    if (mapped === 'off') out.enabled = false;
    else if (mapped !== undefined) out.effort = mapped;
  }
  const summary = r.summary ?? r.generate_summary ?? undefined;
  if (summary !== undefined) out.summary = summary;
  if (r.max_tokens !== undefined) out.maxTokens = r.max_tokens;
  if (r.enabled !== undefined) out.enabled = r.enabled;
  else if (out.enabled === undefined && r.type === 'disabled') out.enabled = false;
  else if (out.enabled === undefined && (r.type === 'enabled' || r.type === 'adaptive')) out.enabled = true;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * `reasoning` with the effort of an inline `reasoning_effort` option (decisions.md section 6): it stands for the
 * body's `reasoning.effort` and wins over it; `none` turns reasoning off.
 */
export function withReasoningEffort(r: CanonicalReasoning | undefined, effort: PublicReasoningEffort): CanonicalReasoning {
  const { effort: _effort, enabled: _enabled, ...rest } = r ?? {};
  return { ...rest, ...canonicalReasoning({ effort }) };
}

/**
 * The catalog `supports` vocabulary, in a fixed order: `requestedParameters` lists the optional features a
 * request uses, so routing can drop (or, with `require_parameters`, exclude) endpoints lacking them. An output limit
 * is not one: every endpoint takes it and the reservation is sized by it, so a catalog need not list `max_tokens`
 * (decisions.md section 1: the contract's names must work unchanged). `service_tier` (a tier other than standard) is
 * taken by the endpoints whose catalog `tiers` price that tier, whatever their `supports` says (routing reads `tiers`).
 */
export const REQUEST_PARAMETERS = [
  'temperature',
  'top_p',
  'top_k',
  'presence_penalty',
  'frequency_penalty',
  'stop',
  'seed',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'reasoning',
  'response_format',
  'logprobs',
  'top_logprobs',
  'service_tier',
  'stream',
] as const;
export type RequestParameter = (typeof REQUEST_PARAMETERS)[number];

/**
 * Each parameter's canonical request fields: what is left out of the call to an endpoint that does not support
 * the parameter (the plan names them in this vocabulary, `PlannedCandidate.dropParams`). `stream` is never left
 * out: the reply mode depends on it.
 */
export const PARAMETER_FIELDS: Readonly<Record<RequestParameter, ReadonlyArray<keyof TextRequest>>> = {
  temperature: ['temperature'],
  top_p: ['topP'],
  top_k: ['topK'],
  presence_penalty: ['presencePenalty'],
  frequency_penalty: ['frequencyPenalty'],
  stop: ['stop'],
  seed: ['seed'],
  tools: ['tools', 'toolChoice', 'parallelToolCalls'],
  tool_choice: ['toolChoice'],
  parallel_tool_calls: ['parallelToolCalls'],
  reasoning: ['reasoning'],
  response_format: ['textFormat'],
  logprobs: ['logprobs', 'topLogprobs'],
  top_logprobs: ['topLogprobs'],
  service_tier: ['serviceTier'],
  stream: [],
};

/** The request for one endpoint: the upstream model name, without the parameters the endpoint does not support. */
export function requestWithout(base: Omit<TextRequest, 'model'>, upstreamModel: string, drop: readonly string[]): TextRequest {
  const req: TextRequest = { ...base, model: upstreamModel };
  for (const p of drop) for (const f of PARAMETER_FIELDS[p as RequestParameter] ?? []) delete req[f];
  return req;
}

/** What both request mappers return: the canonical request minus the upstream model name. */
export type CanonicalTextRequest = Omit<TextRequest, 'model'> & {
  requestedParameters: RequestParameter[];
  /** Parts of the request that were accepted but have no effect (unsupported tool types, item references). */
  warnings: string[];
};

/** The parameters a canonical request uses. Defaults (`tool_choice: auto`, `parallel_tool_calls: true`) are not uses. */
export function requestedParameters(req: Omit<TextRequest, 'model'>): RequestParameter[] {
  const used = new Set<RequestParameter>();
  if (req.temperature !== undefined) used.add('temperature');
  if (req.topP !== undefined) used.add('top_p');
  if (req.topK !== undefined) used.add('top_k');
  if (req.presencePenalty !== undefined) used.add('presence_penalty');
  if (req.frequencyPenalty !== undefined) used.add('frequency_penalty');
  if (req.stop !== undefined && req.stop.length > 0) used.add('stop');
  if (req.seed !== undefined) used.add('seed');
  if (req.tools !== undefined && req.tools.length > 0) used.add('tools');
  if (req.toolChoice !== undefined && req.toolChoice !== 'auto') used.add('tool_choice');
  if (req.parallelToolCalls === false) used.add('parallel_tool_calls');
  if (req.reasoning !== undefined && req.reasoning.enabled !== false) used.add('reasoning');
  if (req.textFormat !== undefined && req.textFormat.type !== 'text') used.add('response_format');
  if (req.logprobs === true) used.add('logprobs');
  if (req.logprobs === true && (req.topLogprobs ?? 0) > 0) used.add('top_logprobs');
  if (askedTier(req.serviceTier) !== undefined) used.add('service_tier');
  if (req.stream) used.add('stream');
  return REQUEST_PARAMETERS.filter((p) => used.has(p));
}

/** The request fields chat completions and responses share, set alike: log-probabilities, the user's ids, the cache key, the tier. */
export interface CommonTextFields {
  top_logprobs?: number | null;
  user?: string | null;
  safety_identifier?: string | null;
  prompt_cache_key?: string | null;
  service_tier?: string | null;
}

/** Sets the fields both text formats share, then the parameters the request asks for: a mapper's last step. */
export function finishTextRequest(req: CanonicalTextRequest, body: CommonTextFields, wantsLogprobs: boolean): CanonicalTextRequest {
  if (wantsLogprobs) {
    req.logprobs = true;
    if (body.top_logprobs != null) req.topLogprobs = body.top_logprobs;
  }
  // Two ids, two meanings: `safety_identifier` is not the deprecated `user` (each provider sends what it has).
  if (body.user) req.user = body.user;
  if (body.safety_identifier) req.safetyIdentifier = body.safety_identifier;
  if (body.prompt_cache_key) req.promptCacheKey = body.prompt_cache_key;
  if (body.service_tier) req.serviceTier = body.service_tier;
  req.requestedParameters = requestedParameters(req);
  return req;
}

/**
 * Canonical token usage + the settled cost → the public `usage` objects (interface.md "Response object":
 * `usage` fields). Money arrives as decimal strings and leaves as JSON numbers rounded to 6 places.
 */

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

/** The token details both usage objects show: cached, cache-write and audio input; reasoning and audio output. */
function tokenDetails(u: TokenUsage): { input: InputTokensDetails; output: OutputTokensDetails } {
  return {
    input: { cached_tokens: u.cachedTokens ?? 0, cache_write_tokens: u.cacheWriteTokens ?? 0, audio_tokens: u.audioInputTokens ?? 0, video_tokens: 0 },
    output: {
      reasoning_tokens: u.reasoningTokens ?? 0,
      audio_tokens: u.audioOutputTokens ?? 0,
      image_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** `inputTokens` already includes cached and cache-write tokens (the canonical convention). */
export function publicUsage(u: TokenUsage, cost: UsageCost, extras?: UsageExtras): PublicUsage {
  const { input, output } = tokenDetails(u);
  const total = moneyJson(cost.totalRub);
  return {
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
    ...(extras?.plugins !== undefined && { plugins: extras.plugins }),
    ...(extras?.pluginPostProcessError !== undefined && { plugin_post_process_error: extras.pluginPostProcessError }),
  };
}

/** `usage` of a chat completion (and of the last chunk of a stream with `include_usage`). */
export function chatUsage(u: TokenUsage, cost: Pick<UsageCost, 'totalRub'>, extras?: UsageExtras): ChatUsage {
  const { input, output } = tokenDetails(u);
  const total = moneyJson(cost.totalRub);
  return {
    prompt_tokens: u.inputTokens,
    completion_tokens: u.outputTokens,
    total_tokens: u.inputTokens + u.outputTokens,
    prompt_tokens_details: input,
    completion_tokens_details: output,
    cost_rub: total,
    cost: total,
    ...(extras?.plugins !== undefined && { plugins: extras.plugins }),
    ...(extras?.pluginPostProcessError !== undefined && { plugin_post_process_error: extras.pluginPostProcessError }),
  };
}

/** `usage` of an embedding list. */
export function embeddingUsage(inputTokens: number, totalRub: string): EmbeddingUsage {
  const total = moneyJson(totalRub);
  return { prompt_tokens: inputTokens, total_tokens: inputTokens, cost_rub: total, cost: total };
}

/** Each count's names, the first present one counting: ours, then the Responses API's, then chat's. */
const STORED_TOKEN_KEYS: ReadonlyArray<['input' | 'output', readonly string[]]> = [
  ['input', ['inputTokens', 'input_tokens', 'prompt_tokens']],
  ['output', ['outputTokens', 'output_tokens', 'completion_tokens']],
];

/**
 * The input and output tokens a generation's stored usage counts: our TokenUsage names, or the snake_case ones a
 * record may carry (media usage, batch lines). Undefined where it counts none.
 */
export function storedTokenCounts(usage: unknown): { input?: number; output?: number } {
  if (!usage || typeof usage !== 'object' || Array.isArray(usage)) return {};
  const u = usage as Record<string, unknown>;
  const counts: { input?: number; output?: number } = { input: undefined, output: undefined };
  for (const [side, keys] of STORED_TOKEN_KEYS) {
    for (const key of keys) {
      const v = u[key];
      if (typeof v === 'number' && Number.isFinite(v)) {
        counts[side] = v;
        break;
      }
    }
  }
  return counts;
}
