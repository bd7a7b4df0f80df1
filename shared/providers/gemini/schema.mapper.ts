/**
 * JSON Schema (tool parameters, response formats) → Gemini's `Schema`, a subset of OpenAPI 3.0:
 * https://ai.google.dev/api/caching#Schema (js-genai `src/types.ts` `Schema`). Its `enum` is a list of strings, it has
 * `nullable` instead of a `null` type, and no `additionalProperties`, `$ref`, `const`, `oneOf` or `allOf`.
 */
import { isRecord } from '../mapper-utils';

/** The fields Gemini's `Schema` has; anything else is refused upstream, so it is left out. */
const SCHEMA_FIELDS = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required',
  'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering',
  'default', 'items', 'minimum', 'maximum',
]);

/** Keywords that only organise a schema (their meaning is inlined or nil): left out without a word. */
const SILENT = new Set(['$schema', '$id', '$defs', 'definitions', '$comment', 'examples']);

/** What a translation gives: the Gemini schema, and the JSON Schema keywords it could not carry (sorted, once each). */
export interface GeminiSchemaResult {
  schema: Record<string, unknown>;
  dropped: string[];
}

/**
 * Keeps the fields Gemini accepts, upper-cases `type`, turns a `null` type or enum value into `nullable`, `const` into a
 * one-value `enum`, `oneOf` into `anyOf`, and inlines local `$ref`s (`#/$defs/X`, `#/definitions/X`) up to a small
 * depth. An enum of numbers or booleans, `additionalProperties`, and any other keyword Gemini lacks are left out and
 * named in `dropped`.
 */
export function toGeminiSchema(schema: Record<string, unknown>): GeminiSchemaResult {
  const root = schema;
  const dropped = new Set<string>();
  const convert = (node: unknown, depth: number): unknown => {
    if (!isRecord(node)) return node;
    if (typeof node.$ref === 'string') {
      const target = depth < 8 ? resolveRef(root, node.$ref) : undefined;
      if (target) return convert(target, depth + 1);
      dropped.add('$ref');
      return { type: 'OBJECT' };
    }
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'type') typeOf(value, out);
      else if (key === 'enum' || key === 'const') enumOf(key === 'enum' ? value : [value], out, dropped);
      else if (key === 'properties' && isRecord(value)) out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, convert(v, depth)]));
      else if (key === 'items') out.items = convert(value, depth);
      else if ((key === 'anyOf' || key === 'oneOf') && Array.isArray(value)) out.anyOf = value.map((v) => convert(v, depth));
      else if (key === 'allOf' && Array.isArray(value) && value.length === 1) Object.assign(out, convert(value[0], depth));
      else if (key === 'additionalProperties' && value === true) continue;
      else if (SCHEMA_FIELDS.has(key)) out[key] = value;
      else if (!SILENT.has(key)) dropped.add(key);
    }
    return out;
  };
  const out = convert(schema, 0) as Record<string, unknown>;
  return { schema: out, dropped: [...dropped].sort() };
}

/** `"string"`, `["string", "null"]`: the first real type upper-cased, `nullable` for `null`; several real types become `anyOf`. */
function typeOf(value: unknown, out: Record<string, unknown>): void {
  const types = (Array.isArray(value) ? value : [value]).filter((t): t is string => typeof t === 'string');
  const real = types.filter((t) => t !== 'null');
  if (real.length === 1) out.type = real[0]!.toUpperCase();
  else if (real.length > 1) out.anyOf = real.map((t) => ({ type: t.toUpperCase() }));
  if (types.includes('null')) out.nullable = true;
}

/** Enum values: `null` makes the schema `nullable`; strings stay; numbers and booleans cannot be said (Gemini's enum is strings). */
function enumOf(value: unknown, out: Record<string, unknown>, dropped: Set<string>): void {
  const values = Array.isArray(value) ? value : [];
  if (values.includes(null)) out.nullable = true;
  const rest = values.filter((v) => v !== null);
  if (rest.every((v) => typeof v === 'string')) {
    if (rest.length > 0) out.enum = rest;
  } else dropped.add('enum of non-string values');
}

function resolveRef(root: Record<string, unknown>, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const segment of ref.slice(2).split('/')) {
    if (!isRecord(node)) return undefined;
    node = node[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}
