/**
 * Checks a request body against its provider's own definition (fakes/definitions/*.json: OpenAI's OpenAPI request
 * schemas, our JSON Schemas of Anthropic's and Gemini's request types) before a fake answers it, so that a request the
 * real provider would refuse is refused here too, with the provider's own 400. A fake holds one `RequestChecker`: it
 * loads a definition set and compiles a request schema on first use only (tests start many fakes, most use few).
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { NOT_REQUIRED } from './provider-rules';

export type DefinitionSet = 'openai' | 'anthropic' | 'gemini';

interface Definitions {
  requests: Record<string, string>;
  /** OpenAI: the top-level fields each request schema allows (the document's `allOf`s keep no `additionalProperties`). */
  fields?: Record<string, string[]>;
  definitions: Record<string, object>;
}

/** What a check found wrong: where (a path of property names and indexes) and what. */
export interface Violation {
  path: Array<string | number>;
  /** `unknown`: a field the definition does not have; `missing`: a required one absent; `invalid`: a value it does not allow. */
  kind: 'unknown' | 'missing' | 'invalid';
  message: string;
}

const FILES: Record<DefinitionSet, string> = { openai: 'openai-requests.json', anthropic: 'anthropic-requests.json', gemini: 'gemini-requests.json' };

/** The definitions folder: beside this file, or (run from dist/fakes) in the source tree. */
function definitionsFile(name: string): string {
  const here = path.join(__dirname, 'definitions', name);
  return fs.existsSync(here) ? here : path.join(__dirname, '..', '..', 'fakes', 'definitions', name);
}

const segments = (pointer: string): Array<string | number> =>
  pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));

/**
 * The one violation to report of ajv's errors: an unknown field first, else the deepest invalid value (the branch of an
 * `anyOf` that got furthest), so the message names the value at fault rather than the union around it.
 */
function pick(errors: ErrorObject[]): Violation {
  const unknown = errors.filter((e) => e.keyword === 'additionalProperties');
  if (unknown.length > 0) {
    const deepest = unknown.reduce((a, b) => (segments(b.instancePath).length > segments(a.instancePath).length ? b : a));
    const field = (deepest.params as { additionalProperty: string }).additionalProperty;
    return { path: [...segments(deepest.instancePath), field], kind: 'unknown', message: `Unknown field '${field}'` };
  }
  const concrete = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'if');
  const pool = concrete.length > 0 ? concrete : errors;
  const deepest = pool.reduce((a, b) => (segments(b.instancePath).length > segments(a.instancePath).length ? b : a));
  const where = segments(deepest.instancePath);
  if (deepest.keyword === 'required') return { path: [...where, (deepest.params as { missingProperty: string }).missingProperty], kind: 'missing', message: 'is required' };
  const allowed = (deepest.params as { allowedValues?: unknown[]; allowedValue?: unknown }).allowedValues ?? [(deepest.params as { allowedValue?: unknown }).allowedValue];
  const message = deepest.keyword === 'enum' || deepest.keyword === 'const' ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}` : (deepest.message ?? 'is invalid');
  return { path: where, kind: 'invalid', message };
}

interface Loaded {
  defs: Definitions;
  ajv: Ajv;
  compiled: Map<string, ValidateFunction>;
}

/** One fake's checks: the definition sets it loaded and the validators it compiled. */
export class RequestChecker {
  private readonly loaded = new Map<DefinitionSet, Loaded>();

  /**
   * Checks `body` against the request schema of `operation` (`POST /chat/completions`, `generateContent`) in a
   * definition set; undefined when it conforms or the operation has none. OpenAI's top-level fields are checked
   * against the document's list of them as well.
   */
  check(set: DefinitionSet, operation: string, body: unknown): Violation | undefined {
    const l = this.load(set);
    const name = l.defs.requests[operation];
    if (!name) return undefined;
    const fields = l.defs.fields?.[name];
    if (fields && typeof body === 'object' && body !== null && !Array.isArray(body)) {
      const unknown = Object.keys(body).find((k) => !fields.includes(k));
      if (unknown !== undefined) return { path: [unknown], kind: 'unknown', message: `Unknown field '${unknown}'` };
    }
    let validate = l.compiled.get(name);
    if (!validate) {
      validate = l.ajv.compile({ $ref: `${set}#/definitions/${name}` });
      l.compiled.set(name, validate);
    }
    if (validate(body)) return undefined;
    return pick(validate.errors ?? []);
  }

  private load(set: DefinitionSet): Loaded {
    let l = this.loaded.get(set);
    if (!l) {
      const defs = JSON.parse(fs.readFileSync(definitionsFile(FILES[set]), 'utf8')) as Definitions;
      for (const [name, fields] of Object.entries(NOT_REQUIRED[set] ?? {})) {
        const schema = defs.definitions[name] as { required?: string[] } | undefined;
        if (schema?.required) schema.required = schema.required.filter((f) => !fields.includes(f));
      }
      const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
      ajv.addSchema({ $id: set, definitions: defs.definitions });
      l = { defs, ajv, compiled: new Map() };
      this.loaded.set(set, l);
    }
    return l;
  }
}

/** `messages[0].content` (OpenAI's `param`), or with `dots` (`messages.0.content`, Anthropic's). */
export function dotted(p: ReadonlyArray<string | number>, indexes: 'brackets' | 'dots' = 'brackets'): string {
  return p.reduce<string>((out, s) => (typeof s === 'number' ? (indexes === 'brackets' ? `${out}[${s}]` : `${out}.${s}`) : out ? `${out}.${s}` : s), '');
}
