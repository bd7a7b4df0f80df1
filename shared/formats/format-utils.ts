/** Small pure helpers shared by the public-format mappers: money in JSON, log-probabilities, reasoning. */
import type { TextRequest, TokenLogprob } from '../providers/provider.types';
import { Decimal, parseMoney } from '../money';
import { askedTier } from '../catalog/service-tiers';
import type { PublicReasoningEffort, ResponsesReasoning } from '../schemas/responses.schema';

/** Rounds a decimal string (or number) to `places` decimals, half away from zero, exactly (no float math). */
export function roundDecimal(value: string | number, places = 6): string {
  const d = parseMoney(value);
  if (!d) throw new TypeError(`Not a decimal number: ${String(value)}`);
  const rounded = d.toDecimalPlaces(places, Decimal.ROUND_HALF_UP);
  return rounded.isZero() ? '0' : rounded.toFixed();
}

/** A money amount as replies show it: a JSON number rounded to 6 places (decisions.md section 4). */
export function moneyJson(value: string | number): number {
  return Number(roundDecimal(value, 6));
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
