import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { AppError, type ValidationIssue } from '../errors/app-error';

/**
 * One Ajv instance for every request schema. The same schemas feed the OpenAPI document.
 * `coerceTypes` is off for bodies; query strings are coerced by their own instance.
 */
export const ajv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true }));
export const queryAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: true }));

function issuePath(e: ErrorObject): string {
  if (e.keyword === 'required') return `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`;
  if (e.keyword === 'additionalProperties') return `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}`;
  return e.instancePath || '/';
}

export function toIssues(errors: ErrorObject[] | null | undefined): ValidationIssue[] {
  const seen = new Set<string>();
  const out: ValidationIssue[] = [];
  for (const e of errors ?? []) {
    const path = issuePath(e);
    const message = e.keyword === 'additionalProperties' ? 'is not a known field' : (e.message ?? 'is invalid');
    const k = `${path} ${message}`;
    if (!seen.has(k)) out.push({ path, message });
    seen.add(k);
  }
  return out;
}

const cache = new WeakMap<object, ValidateFunction>();
const queryCache = new WeakMap<object, ValidateFunction>();

/** Validates (and fills defaults into) `value`; throws 400 BAD_REQUEST with `details.errors` when invalid. */
export function check<T>(schema: object, value: unknown, opts: { query?: boolean } = {}): T {
  const store = opts.query ? queryCache : cache;
  let fn = store.get(schema);
  if (!fn) {
    fn = (opts.query ? queryAjv : ajv).compile(schema);
    store.set(schema, fn);
  }
  if (!fn(value)) throw AppError.validation(toIssues(fn.errors));
  return value as T;
}
