/** What the OpenAI wire format's handlers share (openai.ts, openai-responses.ts): the error body, what OpenAI refuses, rendering. */
import { arr, obj, sendRaw, str } from './common';
import type { Ctx, Json } from './common';
import { utf8Bytes } from './synth';
import type { TokenLogprob } from './synth';
import { dotted } from './request-check';
import { familyOf, OPENAI_FAMILIES } from './provider-rules';

const ERRORS: Record<number, [type: string, code: string | null, message: string]> = {
  400: ['invalid_request_error', null, 'Invalid request.'],
  401: ['invalid_request_error', 'invalid_api_key', 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.'],
  403: ['invalid_request_error', 'unsupported_country_region_territory', 'Country, region, or territory not supported'],
  404: ['invalid_request_error', 'model_not_found', 'The model does not exist or you do not have access to it.'],
  429: ['requests', 'rate_limit_exceeded', 'Rate limit reached for requests per min (RPM). Please try again in 1s.'],
  500: ['server_error', null, 'The server had an error while processing your request. Sorry about that!'],
  503: ['server_error', null, 'The engine is currently overloaded, please try again later.'],
};

export function error(ctx: Ctx, status: number, message?: string, param: string | null = null, code?: string | null): void {
  const [type, defCode, defMessage] = ERRORS[status] ?? (status >= 500 ? ERRORS[500] : ERRORS[400]);
  sendRaw(ctx, status, { error: { message: message ?? defMessage, type, param, code: code === undefined ? defCode : code } });
}
export const missing = (ctx: Ctx, param: string): void => error(ctx, 400, `Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
export const invalid = (ctx: Ctx, param: string, message: string): void => error(ctx, 400, message, param, 'invalid_value');

// ---------- what OpenAI refuses ----------

/**
 * OpenAI's 400 for a body its OpenAPI document does not allow (fakes/definitions/openai-requests.json), or for a
 * model's documented rules (provider-rules.ts): sent, and true, when the request is refused.
 */
export function refused(ctx: Ctx, operation: string): boolean {
  const v = ctx.shared.checker.check('openai', operation, ctx.body);
  if (v) {
    const param = dotted(v.path);
    if (v.kind === 'unknown') {
      if (operation === 'POST /chat/completions') error(ctx, 400, `Unrecognized request argument supplied: ${param}`, null, null);
      else error(ctx, 400, `Unknown parameter: '${param}'.`, param, 'unknown_parameter');
    } else if (v.kind === 'missing') missing(ctx, param);
    else error(ctx, 400, `Invalid '${param}': ${v.message}.`, param, 'invalid_value');
    return true;
  }
  const b = obj(ctx.body);
  const family = familyOf(OPENAI_FAMILIES, str(b.model) ?? '');
  if (!family || (operation !== 'POST /chat/completions' && operation !== 'POST /responses')) return false;
  const [effortParam, effort] = operation === 'POST /responses' ? ['reasoning.effort', obj(b.reasoning).effort] : ['reasoning_effort', b.reasoning_effort];
  if (effort !== undefined && effort !== null) {
    if (!family.efforts) return unsupported(ctx, effortParam);
    if (!family.efforts.includes(String(effort))) {
      const list = family.efforts.map((e) => `'${e}'`);
      const supported = `${list.slice(0, -1).join(', ')}, and ${list[list.length - 1]}`;
      error(ctx, 400, `Unsupported value: '${effortParam}' does not support '${String(effort)}' with this model. Supported values are: ${supported}.`, effortParam, 'unsupported_value');
      return true;
    }
  }
  const refusedParam = family.refuses?.find((p) => b[p] !== undefined && b[p] !== null);
  return refusedParam !== undefined && unsupported(ctx, refusedParam);
}

function unsupported(ctx: Ctx, param: string): true {
  error(ctx, 400, `Unsupported parameter: '${param}' is not supported with this model.`, param, 'unsupported_parameter');
  return true;
}

// ---------- rendering ----------

/**
 * The tier a reply says served the call: the one asked for, `default` for `auto` or none (a project without Scale Tier);
 * the `serviceTier` knob instead when set (`default`: priority capacity ran out and the call was served at standard).
 */
export function servedTier(body: Json, knobs: { serviceTier?: string }): string {
  if (knobs.serviceTier !== undefined) return knobs.serviceTier;
  const asked = str(body.service_tier);
  return asked === undefined || asked === 'auto' ? 'default' : asked;
}

export function logprobItem(p: TokenLogprob, k: number): Json {
  return {
    token: p.token,
    logprob: p.logprob,
    bytes: utf8Bytes(p.token),
    top_logprobs: p.top.slice(0, k).map(([token, logprob]) => ({ token, logprob, bytes: utf8Bytes(token) })),
  };
}

/** Text of a message `content`: a string, or the `text` of its text parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  let out = '';
  for (const part of arr(content)) {
    const p = obj(part);
    out += str(p.text) ?? str(p.refusal) ?? (typeof p.output === 'string' ? p.output : '');
  }
  return out;
}
