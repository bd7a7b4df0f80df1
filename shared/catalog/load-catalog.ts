import fs from 'node:fs';
import Ajv from 'ajv';
import { catalogSchema } from './catalog.schema';
import { expandSupports } from './supports';
import { PROVIDER_KINDS, type Catalog, type EndpointConfig, type ModelConfig, type Price, type ProviderConfig } from './catalog.types';

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
  models: Record<string, { displayName: string; type: ModelConfig['type']; endpoints: Array<Omit<EndpointConfig, 'slug' | 'price' | 'supports'> & { price: Record<string, number | string>; supports?: string[] }> }>;
}

/**
 * Validates a catalog and resolves provider keys from the environment. Every problem is named: a missing
 * provider, an unknown kind, a negative price, a duplicate id (decisions.md section 1).
 */
export function parseCatalog(raw: unknown, env: NodeJS.ProcessEnv = process.env, sourceText?: string): Catalog {
  const problems: string[] = [];
  if (!validateShape(raw)) {
    for (const e of validateShape.errors ?? []) problems.push(`${e.instancePath || '/'} ${e.message}`);
    throw new CatalogError(problems);
  }
  const data = raw as unknown as RawCatalog;
  if (sourceText) problems.push(...findDuplicateKeys(sourceText));

  // Null-prototype maps: an id such as `valueOf` or `__proto__` must never find something inherited.
  const providers: Record<string, ProviderConfig> = Object.create(null);
  for (const [id, p] of Object.entries(data.providers)) {
    if (!(PROVIDER_KINDS as readonly string[]).includes(p.kind)) problems.push(`provider "${id}": unknown kind "${p.kind}" (known: ${PROVIDER_KINDS.join(', ')})`);
    providers[id] = { ...p, id, kind: p.kind, timeoutMs: p.timeoutMs ?? 60_000, apiKey: p.apiKeyEnv ? env[p.apiKeyEnv] || undefined : undefined };
  }

  const models: Record<string, ModelConfig> = Object.create(null);
  for (const [id, m] of Object.entries(data.models)) {
    const slugs = new Set<string>();
    const endpoints: EndpointConfig[] = m.endpoints.map((e, i) => {
      if (!providers[e.provider]) problems.push(`model "${id}" endpoint ${i}: provider "${e.provider}" is not defined`);
      const slug = `${id}:${e.provider}`;
      if (slugs.has(slug)) problems.push(`model "${id}": duplicate endpoint for provider "${e.provider}"`);
      slugs.add(slug);
      const price: Price = {};
      for (const [field, value] of Object.entries(e.price)) {
        const text = String(value);
        if (text.startsWith('-')) problems.push(`model "${id}" endpoint ${i}: negative price ${field} = ${text}`);
        price[field as keyof Price] = text;
      }
      return { ...e, slug, price, supports: expandSupports(e.supports ?? []) };
    });
    models[id] = { id, displayName: m.displayName, type: m.type, endpoints };
  }
  if (problems.length) throw new CatalogError(problems);
  return { providers, models };
}

/** JSON.parse silently keeps the last of two equal keys; a catalog must not have any. */
function findDuplicateKeys(text: string): string[] {
  const problems: string[] = [];
  const stack: Array<Set<string>> = [];
  const re = /"((?:[^"\\]|\\.)*)"\s*:|[{}]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    if (m[0] === '{') stack.push(new Set());
    else if (m[0] === '}') stack.pop();
    else {
      const keys = stack[stack.length - 1];
      if (!keys) continue;
      if (keys.has(m[1])) problems.push(`duplicate id "${m[1]}"`);
      keys.add(m[1]);
    }
  }
  return problems;
}

export function loadCatalog(file: string, env: NodeJS.ProcessEnv = process.env): Catalog {
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
  return parseCatalog(raw, env, text);
}

/** Providers whose key variable is named but unset: logged at start. */
export function providersWithoutKey(catalog: Catalog): string[] {
  return Object.values(catalog.providers)
    .filter((p) => p.apiKeyEnv && !p.apiKey)
    .map((p) => `${p.id} (${p.apiKeyEnv})`);
}
