import { RoutingInputError } from './routing-errors';
import type { ProviderPreferences } from './routing.types';

/** Inline options: `<model>@provider=<name>&reasoning_effort=<level>&allow_fallbacks=<bool>`. */
export const INLINE_MODEL_OPTIONS = ['provider', 'reasoning_effort', 'allow_fallbacks'] as const;
export type InlineModelOption = (typeof INLINE_MODEL_OPTIONS)[number];

/** Accepted `reasoning_effort` values (OpenAI's levels plus `max`). */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

export interface ModelSpec {
  model: string;
  /** `provider=X` is `provider.order = [X]` (decisions.md section 6). */
  provider?: { order: [string] };
  reasoningEffort?: ReasoningEffort;
  allowFallbacks?: boolean;
}

export interface ParseModelSpecOptions {
  /** When given and the whole string is a known model id, it is taken as is (ids that contain '@'). */
  isKnownModel?: (id: string) => boolean;
  /** Field named in errors; default `model`. */
  field?: string;
}

/**
 * Split a `model` field into the model id and its inline routing options.
 * Throws `RoutingInputError` on an empty model, an unknown or repeated option, an empty value,
 * a bad boolean or an unknown reasoning effort.
 */
export function parseModelSpec(model: string, options: ParseModelSpecOptions = {}): ModelSpec {
  const field = options.field ?? 'model';
  if (typeof model !== 'string' || model.length === 0) {
    throw new RoutingInputError(field, 'Model must be a non-empty string');
  }
  // Option values never contain '@', so the last '@' separates the options from an id that may hold one.
  const at = model.lastIndexOf('@');
  if (at < 0 || options.isKnownModel?.(model)) return { model };
  const id = model.slice(0, at);
  const query = model.slice(at + 1);
  if (id.length === 0) throw new RoutingInputError(field, `Model is missing before '@' in '${model}'`);
  if (query.length === 0) throw new RoutingInputError(field, `No routing options after '@' in '${model}'`);

  const spec: ModelSpec = { model: id };
  const seen = new Set<string>();
  for (const pair of query.split('&')) {
    if (pair.length === 0) throw new RoutingInputError(field, `Empty routing option in '${model}'`);
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    const raw = eq < 0 ? '' : pair.slice(eq + 1);
    if (!(INLINE_MODEL_OPTIONS as readonly string[]).includes(key)) {
      throw new RoutingInputError(
        field,
        `Unknown routing option '${key}' in model '${model}'; allowed: ${INLINE_MODEL_OPTIONS.join(', ')}`,
      );
    }
    if (seen.has(key)) throw new RoutingInputError(field, `Routing option '${key}' is given twice in '${model}'`);
    seen.add(key);
    const value = decode(raw, key, field);
    if (value.trim().length === 0) throw new RoutingInputError(field, `Routing option '${key}' has no value`);
    switch (key as InlineModelOption) {
      case 'provider':
        spec.provider = { order: [value] };
        break;
      case 'reasoning_effort': {
        const effort = value.toLowerCase();
        if (!(REASONING_EFFORTS as readonly string[]).includes(effort)) {
          throw new RoutingInputError(
            field,
            `Bad reasoning_effort '${value}'; allowed: ${REASONING_EFFORTS.join(', ')}`,
          );
        }
        spec.reasoningEffort = effort as ReasoningEffort;
        break;
      }
      case 'allow_fallbacks': {
        const b = value.toLowerCase();
        if (b !== 'true' && b !== 'false') {
          throw new RoutingInputError(field, `Bad allow_fallbacks '${value}'; expected true or false`);
        }
        spec.allowFallbacks = b === 'true';
        break;
      }
    }
  }
  return spec;
}

function decode(raw: string, key: string, field: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new RoutingInputError(field, `Routing option '${key}' has a malformed value`);
  }
}

/**
 * The routing object with the inline options applied on top: inline `provider` replaces `order`,
 * inline `allow_fallbacks` replaces `allow_fallbacks`. Returns a new object.
 */
export function applyModelSpec(preferences: ProviderPreferences | undefined, spec: ModelSpec): ProviderPreferences {
  const out: ProviderPreferences = { ...(preferences ?? {}) };
  if (spec.provider) out.order = [...spec.provider.order];
  if (spec.allowFallbacks !== undefined) out.allow_fallbacks = spec.allowFallbacks;
  return out;
}
