import fs from 'node:fs';
import Ajv from 'ajv';
import { catalogSchema } from './catalog.schema';
import { expandSupports } from './supports';
import { BATCH_API_MODEL_TYPES, PROVIDER_KINDS, SERVICE_TIERS, TIERED_PROVIDER_KINDS, type Catalog, type EndpointConfig, type ModelConfig, type Price, type ProviderConfig } from './catalog.types';

export class CatalogError extends Error {
  constructor(readonly problems: string[]) {
    super(`catalog refused:\n- ${problems.join('\n- ')}`);
    this.name = 'CatalogError';
  }
}

const ajv = new Ajv({ allErrors: true, strict: false });
const validateShape = ajv.compile(catalogSchema);

interface RawCatalog {
  providers: Record<string, Omit<ProviderConfig, 'id' | 'timeoutMs' | 'apiKey'> & { timeoutMs?: number }>;
  models: Record<string, { displayName: string; type: ModelConfig['type']; endpoints: Array<Omit<EndpointConfig, 'slug' | 'price' | 'supports' | 'batch' | 'tiers'> & { price: Record<string, number | string>; supports?: string[]; batch?: { price: Record<string, number | string> }; tiers?: Record<string, { price: Record<string, number | string> }> }> }>;
}

/**
 * Validates a catalog and resolves provider keys (`apiKeyEnv`) from `keys`: Config.providerKeys, or a test's own. Every problem is named: a missing
 * provider, an unknown kind, a negative price, a duplicate id (decisions.md section 1), and what the schema refuses,
 * all in one report (a schema problem does not hide the others).
 */
export function parseCatalog(raw: unknown, keys: Readonly<Record<string, string | undefined>>, sourceText?: string): Catalog {
  const problems: string[] = [];
  if (!validateShape(raw)) for (const e of validateShape.errors ?? []) problems.push(`${e.instancePath || '/'} ${e.message}`);
  if (sourceText) problems.push(...findDuplicateKeys(sourceText));
  problems.push(...referenceProblems(raw));
  if (problems.length) throw new CatalogError(problems);
  const data = raw as unknown as RawCatalog;

  // Null-prototype maps: an id such as `valueOf` or `__proto__` must never find something inherited.
  const providers: Record<string, ProviderConfig> = Object.create(null);
  for (const [id, p] of Object.entries(data.providers)) {
    providers[id] = { ...p, id, kind: p.kind, timeoutMs: p.timeoutMs ?? 60_000, apiKey: p.apiKeyEnv ? keys[p.apiKeyEnv] || undefined : undefined };
  }
  const models: Record<string, ModelConfig> = Object.create(null);
  for (const [id, m] of Object.entries(data.models)) {
    const endpoints: EndpointConfig[] = m.endpoints.map((e) => {
      const { batch, tiers, ...rest } = e;
      return {
        ...rest,
        slug: `${id}:${e.provider}`,
        price: priceOf(e.price),
        supports: expandSupports(e.supports ?? []),
        ...(batch && { batch: { price: priceOf(batch.price) } }),
        ...(tiers && { tiers: Object.fromEntries(Object.entries(tiers).map(([tier, t]) => [tier, { price: priceOf(t.price) }])) }),
      };
    });
    models[id] = { id, displayName: m.displayName, type: m.type, endpoints };
  }
  return { providers, models };
}

/** Prices as decimal strings: no float ever touches money. */
function priceOf(raw: Record<string, number | string>): Price {
  const price: Price = {};
  for (const [field, value] of Object.entries(raw)) price[field as keyof Price] = String(value);
  return price;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The problems between the catalog's parts: an unknown kind, an endpoint's provider not defined, two endpoints of a
 * model on one provider, a negative price. Read defensively: it runs on a catalog the schema may have refused too.
 */
function referenceProblems(raw: unknown): string[] {
  const problems: string[] = [];
  const providers = isRecord(raw) && isRecord(raw.providers) ? raw.providers : {};
  for (const [id, p] of Object.entries(providers)) {
    const kind = isRecord(p) ? p.kind : undefined;
    if (typeof kind === 'string' && !(PROVIDER_KINDS as readonly string[]).includes(kind)) problems.push(`provider "${id}": unknown kind "${kind}" (known: ${PROVIDER_KINDS.join(', ')})`);
  }
  const models = isRecord(raw) && isRecord(raw.models) ? raw.models : {};
  for (const [id, m] of Object.entries(models)) {
    const endpoints = isRecord(m) && Array.isArray(m.endpoints) ? m.endpoints : [];
    const slugs = new Set<string>();
    endpoints.forEach((e: unknown, i) => {
      if (!isRecord(e)) return;
      if (typeof e.provider === 'string') {
        if (!Object.hasOwn(providers, e.provider)) problems.push(`model "${id}" endpoint ${i}: provider "${e.provider}" is not defined`);
        if (slugs.has(e.provider)) problems.push(`model "${id}": duplicate endpoint for provider "${e.provider}"`);
        slugs.add(e.provider);
      }
      for (const [field, value] of Object.entries(isRecord(e.price) ? e.price : {})) {
        if (String(value).startsWith('-')) problems.push(`model "${id}" endpoint ${i}: negative price ${field} = ${String(value)}`);
      }
      if (e.batch !== undefined) problems.push(...batchProblems(`model "${id}" endpoint ${i}`, e, isRecord(m) ? m.type : undefined, providers));
      if (e.tiers !== undefined) problems.push(...tierProblems(`model "${id}" endpoint ${i}`, e, isRecord(m) ? m.type : undefined, providers));
      const kind = kindOf(e, providers);
      if (e.responsesApi === true && kind !== undefined && kind !== 'openai') problems.push(`model "${id}" endpoint ${i}: responsesApi on provider "${String(e.provider)}" of kind "${String(kind)}" (only openai endpoints speak OpenAI's Responses API)`);
      if (e.responsesApi === true && isRecord(m) && m.type !== 'chat') problems.push(`model "${id}" endpoint ${i}: responsesApi on a ${String(m.type)} model (only chat models)`);
    });
  }
  return problems;
}

/**
 * An endpoint's `batch` prices (docs/batches.md "Provider batch APIs"): only on a provider whose kind has a batch API
 * for the model's type (BATCH_API_MODEL_TYPES), each price named in `price` too, none negative, none above the regular
 * one (a line reserves at the regular price: its batch charge must fit in that).
 */
function batchProblems(where: string, e: Record<string, unknown>, type: unknown, providers: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const kind = kindOf(e, providers);
  // An unknown kind is named once, above.
  if (kind !== undefined && (PROVIDER_KINDS as readonly string[]).includes(kind)) {
    const types = (BATCH_API_MODEL_TYPES as Record<string, readonly string[] | undefined>)[kind];
    if (!types) problems.push(`${where}: batch prices on provider "${String(e.provider)}" of kind "${kind}", which has no batch API (batch APIs: ${Object.keys(BATCH_API_MODEL_TYPES).join(', ')})`);
    else if (typeof type === 'string' && !types.includes(type)) problems.push(`${where}: batch prices on a ${type} model, which the ${kind} batch API does not take (it takes ${types.join(', ')})`);
  }
  const regular = isRecord(e.price) ? e.price : {};
  const batch = isRecord(e.batch) && isRecord(e.batch.price) ? e.batch.price : {};
  for (const [field, value] of Object.entries(batch)) {
    const text = String(value);
    if (text.startsWith('-')) problems.push(`${where}: negative batch price ${field} = ${text}`);
    else if (!Object.hasOwn(regular, field)) problems.push(`${where}: batch price ${field} has no regular price ${field}`);
    else if (!String(regular[field]).startsWith('-') && Number(text) > Number(regular[field])) problems.push(`${where}: batch price ${field} = ${text} is above the regular price ${String(regular[field])}`);
  }
  return problems;
}

/**
 * An endpoint's `tiers` prices (shared/catalog/service-tiers.ts): only on a chat model of a provider whose kind sells
 * processing tiers (TIERED_PROVIDER_KINDS), only the tiers it sells, and each tier priced in exactly the names of
 * `price` (a name left out would be charged nothing, or the prompt price for cached tokens), none negative.
 */
function tierProblems(where: string, e: Record<string, unknown>, type: unknown, providers: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const kind = kindOf(e, providers);
  const sold = kind === undefined ? undefined : (TIERED_PROVIDER_KINDS as Record<string, readonly string[] | undefined>)[kind];
  const kinds = Object.keys(TIERED_PROVIDER_KINDS).join(', ');
  // An unknown kind is named once, above.
  if (kind !== undefined && (PROVIDER_KINDS as readonly string[]).includes(kind) && !sold) problems.push(`${where}: tiers on provider "${String(e.provider)}" of kind "${kind}", which sells no processing tiers (tiers: ${kinds})`);
  if (typeof type === 'string' && type !== 'chat') problems.push(`${where}: tiers on a ${type} model (only chat models)`);
  const regular = isRecord(e.price) ? e.price : {};
  for (const [tier, t] of Object.entries(isRecord(e.tiers) ? e.tiers : {})) {
    if (!(SERVICE_TIERS as readonly string[]).includes(tier) || (sold && !sold.includes(tier))) {
      problems.push(`${where}: unknown tier "${tier}" (tiers: ${(sold ?? SERVICE_TIERS).join(', ')})`);
      continue;
    }
    // A tier without a price is the schema's to name.
    if (!isRecord(t) || !isRecord(t.price)) continue;
    const price = t.price;
    for (const [field, value] of Object.entries(price)) {
      if (String(value).startsWith('-')) problems.push(`${where}: negative ${tier} price ${field} = ${String(value)}`);
      else if (!Object.hasOwn(regular, field)) problems.push(`${where}: ${tier} price ${field} has no regular price ${field}`);
    }
    for (const field of Object.keys(regular)) if (!Object.hasOwn(price, field)) problems.push(`${where}: ${tier} prices lack ${field}, which the regular price names`);
  }
  return problems;
}

/** The kind of an endpoint's provider, when the provider is defined and names one. */
function kindOf(e: Record<string, unknown>, providers: Record<string, unknown>): string | undefined {
  const provider = typeof e.provider === 'string' && Object.hasOwn(providers, e.provider) ? providers[e.provider] : undefined;
  return isRecord(provider) && typeof provider.kind === 'string' ? provider.kind : undefined;
}

/** JSON.parse silently keeps the last of two equal keys; a catalog must not have any. */
function findDuplicateKeys(text: string): string[] {
  const problems: string[] = [];
  const stack: Array<Set<string>> = [];
  // Every string is read whole (a brace inside one is text); a string followed by `:` is a key.
  const re = /"((?:[^"\\]|\\.)*)"(\s*:)?|[{}]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    if (m[0] === '{') stack.push(new Set());
    else if (m[0] === '}') stack.pop();
    else if (m[2] !== undefined) {
      const keys = stack[stack.length - 1];
      if (!keys) continue;
      if (keys.has(m[1])) problems.push(`duplicate id "${m[1]}"`);
      keys.add(m[1]);
    }
  }
  return problems;
}

export function loadCatalog(file: string, keys: Readonly<Record<string, string | undefined>>): Catalog {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new CatalogError([`cannot read ${file}: ${(e as Error).message}`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new CatalogError([`${file} is not valid JSON: ${(e as Error).message}`]);
  }
  return parseCatalog(raw, keys, text);
}

/** Providers whose key variable is named but unset: logged at start. */
export function providersWithoutKey(catalog: Catalog): string[] {
  return Object.values(catalog.providers)
    .filter((p) => p.apiKeyEnv && !p.apiKey)
    .map((p) => `${p.id} (${p.apiKeyEnv})`);
}
