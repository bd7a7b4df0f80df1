import { STATUS_CODES } from 'node:http';
import { ERROR_CODES } from '../../shared/errors/error-codes';
import { errorResponseSchema } from './response-schemas';
import { CODE_SAMPLES, EXAMPLE_ORIGIN, type OperationExamples } from './examples';
import { ACCOUNT_EXAMPLES } from './account-examples';
import { PERSONAL_ACCOUNT_EXAMPLES } from './personal-account-examples';
import { TEXT_EXAMPLES } from './text-examples';
import { MEDIA_EXAMPLES } from './media-examples';
import { BATCH_EXAMPLES } from './batch-examples';
import { IDEMPOTENT_ROUTES, ROUTE_DOCS, type JsonSchema, type RouteAuth, type RouteDoc, type RouteResponse } from './route-docs';

/** Keywords ajv understands (or we add for ajv) that are not JSON Schema 2020-12 / OpenAPI 3.1 vocabulary. */
const AJV_ONLY = new Set(['$async', '$data', 'errorMessage', 'instanceof', 'regexp', 'transform', 'typeof', 'dynamicDefaults', 'uniqueItemProperties', 'allRequired', 'anyRequired', 'oneRequired', 'patternRequired', 'prohibited', 'deepProperties', 'deepRequired', 'select', 'selectCases', 'selectDefault']);
/** Keywords whose value maps names to schemas (the keys are names, not keywords). */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is data, not a schema: copied as they are. */
const DATA = new Set(['enum', 'const', 'default', 'examples', 'example', 'required', 'dependentRequired']);

/** Every operation's request and response examples, by "METHOD /path" (api/openapi/examples.ts). */
export const EXAMPLES: Record<string, OperationExamples> = { ...ACCOUNT_EXAMPLES, ...PERSONAL_ACCOUNT_EXAMPLES, ...TEXT_EXAMPLES, ...MEDIA_EXAMPLES, ...BATCH_EXAMPLES };

export type OpenApiDocument = {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  servers: Array<{ url: string }>;
  tags: Array<{ name: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema>; securitySchemes: Record<string, unknown> };
  [k: string]: unknown;
};

export type Operation = {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  deprecated?: boolean;
  security: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: 'path' | 'query' | 'header'; required: boolean; schema: JsonSchema; description?: string; example?: unknown }>;
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema; example?: unknown }> };
  responses: Record<string, unknown>;
  'x-switchyard-auth': RouteAuth;
  /** curl, Python and Node (openai SDK) samples of the main routes, shown by the reference (api/openapi/examples.ts). */
  'x-codeSamples'?: Array<{ lang: string; label: string; source: string }>;
};

const SECURITY: Record<RouteAuth, Array<Record<string, string[]>>> = {
  key: [{ apiKey: [] }],
  token: [{ personalToken: [] }, { sessionCookie: [] }],
  any: [{ apiKey: [] }, { personalToken: [] }, { sessionCookie: [] }],
  // Open unless METRICS_TOKEN is set: the empty requirement says "no auth" is acceptable too.
  metrics: [{ metricsToken: [] }, {}],
  operator: [{ operatorToken: [] }, { adminCookie: [] }],
  none: [],
};

export const AUTH_LABELS: Record<RouteAuth, string> = {
  key: 'API key (Bearer sy_...)',
  token: 'Personal-account token (Bearer JWT) or the sy_session cookie',
  any: 'API key, personal-account token or the sy_session cookie',
  metrics: 'Bearer METRICS_TOKEN when set, otherwise open',
  operator: 'Operator token (Bearer or the sy_admin cookie)',
  none: 'None',
};

/**
 * Turns an ajv schema into its OpenAPI 3.1 form: a deep copy without ajv-only keywords, where a nested
 * schema carrying `$id` becomes a `$ref` to its own component (registered through `register`).
 */
export function toOpenApiSchema(schema: JsonSchema, register: (s: JsonSchema) => string = () => '', root = true): JsonSchema {
  if (!root && typeof schema.$id === 'string') return { $ref: `#/components/schemas/${register(schema)}` };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$id' || k === '$schema' || AJV_ONLY.has(k)) continue;
    if (DATA.has(k)) out[k] = v;
    else if (SCHEMA_MAPS.has(k) && isObject(v)) out[k] = Object.fromEntries(Object.entries(v).map(([n, s]) => [n, isObject(s) ? toOpenApiSchema(s, register, false) : s]));
    else if (Array.isArray(v)) out[k] = v.map((s) => (isObject(s) ? toOpenApiSchema(s, register, false) : s));
    else if (isObject(v)) out[k] = toOpenApiSchema(v, register, false);
    else out[k] = v;
  }
  return out;
}

function isObject(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function operationId(r: RouteDoc): string {
  const words = r.path
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/^\{(.+)\}$/, 'by_$1').replace(/[^a-zA-Z0-9]+/g, '_'));
  return [r.method, ...words].join('_');
}

function responseOf(r: RouteDoc): RouteResponse {
  return typeof r.response === 'string' ? { description: r.response } : r.response;
}

/** Component name of a schema: its `$id`, or one derived from the route (body schemas should carry `$id`). */
function nameOf(schema: JsonSchema, fallback: string): string {
  return typeof schema.$id === 'string' ? schema.$id : fallback;
}

const IDEMPOTENCY_KEY: NonNullable<Operation['parameters']>[number] = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
  description:
    'Makes retries safe: the same key with the same body within 24 hours returns the same generation (a synchronous ' +
    'call waits for or replays its result, an asynchronous one answers its id) and is billed once; the same key with ' +
    'another body is 409 CONFLICT. Keys are per caller (the API key, else the member). A stream still running under the key is 409; a ' +
    'finished one is replayed as a stream. See docs/idempotency.md.',
};

/** The main code of each error status (the first in the table: 401 is UNAUTHORIZED, not api_key_revoked). */
const STATUS_NAMES: Record<number, string> = {};
for (const [code, v] of Object.entries(ERROR_CODES)) STATUS_NAMES[v.status] ??= code;

/**
 * The OpenAPI 3.1 document of `routes` (every route by default), built from the validating schemas. Its server, like
 * its examples and code samples, is EXAMPLE_ORIGIN: GET /openapi.json replaces it with the caller's origin.
 */
export function buildOpenApi(opts: { routes?: RouteDoc[]; version?: string } = {}): OpenApiDocument {
  const routes = opts.routes ?? ROUTE_DOCS;
  const schemas: Record<string, JsonSchema> = {};
  const owners = new Map<string, JsonSchema>();

  const register = (schema: JsonSchema, fallback = 'Schema'): string => {
    const name = nameOf(schema, fallback);
    const owner = owners.get(name);
    if (owner === schema) return name;
    if (owner) throw new Error(`Two different schemas are both named ${name} in the OpenAPI document`);
    owners.set(name, schema);
    schemas[name] = {}; // reserve the name before recursing (self-references)
    schemas[name] = toOpenApiSchema(schema, (s) => register(s), true);
    return name;
  };
  const ref = (schema: JsonSchema, fallback: string) => ({ $ref: `#/components/schemas/${register(schema, fallback)}` });

  register(errorResponseSchema);
  const errorRef = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } } });

  const paths: OpenApiDocument['paths'] = {};
  const tags: string[] = [];
  for (const r of routes) {
    if (!tags.includes(r.tag)) tags.push(r.tag);
    const id = operationId(r);
    const pascal = id.replace(/(^|_)([a-z0-9])/g, (_m, _s, c: string) => c.toUpperCase());
    const op: Operation = { operationId: id, summary: r.summary, tags: [r.tag], security: SECURITY[r.auth], responses: {}, 'x-switchyard-auth': r.auth };
    if (r.description) op.description = r.description;
    if (r.deprecated) op.deprecated = true;
    const examples = EXAMPLES[`${r.method.toUpperCase()} ${r.path}`];
    const samples = CODE_SAMPLES[`${r.method.toUpperCase()} ${r.path}`];
    if (samples) op['x-codeSamples'] = samples;

    const parameters: NonNullable<Operation['parameters']> = [];
    for (const m of r.path.matchAll(/\{([^}]+)\}/g)) parameters.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
    if (r.query) {
      // The query schema is a component too (one source of truth, visible as such); its fields become parameters.
      const q = schemas[register(r.query, `${pascal}Query`)] as { properties?: Record<string, JsonSchema>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {})) {
        const description = typeof schema.description === 'string' ? schema.description : undefined;
        const example = examples?.query?.[name];
        parameters.push({ name, in: 'query', required: (q.required ?? []).includes(name), schema, ...(description ? { description } : {}), ...(example !== undefined ? { example } : {}) });
      }
    }
    const idempotent = IDEMPOTENT_ROUTES.has(`${r.method} ${r.path}`);
    if (idempotent) parameters.push(IDEMPOTENCY_KEY);
    if (parameters.length) op.parameters = parameters;

    if (r.body || r.bodyContentTypes) {
      const content: Record<string, { schema: JsonSchema; example?: unknown }> = {};
      if (r.body) content['application/json'] = { schema: ref(r.body, `${pascal}Request`), ...(examples?.request !== undefined ? { example: examples.request } : {}) };
      for (const t of r.bodyContentTypes ?? []) if (!content[t]) content[t] = { schema: t.startsWith('multipart/') ? { type: 'object', properties: { file: { type: 'string', format: 'binary' } } } : { type: 'string', format: 'binary' } };
      const b = r.body as { required?: unknown[]; minProperties?: number; anyOf?: unknown } | undefined;
      // A body schema with nothing required leaves the body optional; a bytes-only body (an upload) is required.
      op.requestBody = { required: b ? Boolean((b.required?.length ?? 0) > 0 || (b.minProperties ?? 0) > 0 || b.anyOf) : true, content };
    }

    const ok = responseOf(r);
    const types = ok.contentType === undefined ? ['application/json'] : Array.isArray(ok.contentType) ? ok.contentType : [ok.contentType];
    op.responses[String(ok.status ?? 200)] = {
      description: ok.description,
      ...(ok.status === 302
        ? {}
        : {
            content: Object.fromEntries(
              types.map((t, i) => [
                t,
                {
                  ...(ok.schema && t === 'application/json' ? { schema: ref(ok.schema, `${pascal}Response`) } : {}),
                  // The example goes with the first (main) content type: JSON, or the text of a text reply.
                  ...(i === 0 && examples?.response !== undefined ? { example: examples.response } : {}),
                },
              ]),
            ),
          }),
    };
    const errors = new Set<number>(r.errors ?? []);
    if (idempotent) errors.add(409);
    if (r.body || r.query) errors.add(400);
    if (r.auth !== 'none' && r.auth !== 'metrics') errors.add(401).add(429);
    if (r.auth === 'metrics') errors.add(401);
    if (r.auth === 'operator') errors.add(403);
    for (const status of [...errors].sort((a, b) => a - b)) op.responses[String(status)] = errorRef(STATUS_NAMES[status] ?? STATUS_CODES[status] ?? 'Error');
    op.responses.default = errorRef('Any other error, in the same envelope');

    (paths[r.path] ??= {})[r.method] = op;
  }

  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    info: {
      title: 'Switchyard API',
      version: opts.version ?? '0.1.0',
      description:
        'One HTTP/JSON interface to many AI models, billed in RUB. Every non-2xx body is the ErrorResponse envelope; ' +
        'its trace_id is also in the X-Trace-Id header, and every response carries it as X-Request-Id (the SDKs\' request id). Request schemas here are the ones that validate requests.',
    },
    servers: [{ url: EXAMPLE_ORIGIN }],
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      schemas,
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'API key: `sy_` followed by 40 base62 characters' },
        personalToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Personal-account token (HS256 JWT with sub, org, role, exp)' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when the operator sets it' },
        operatorToken: { type: 'http', scheme: 'bearer', description: 'Operator token for the queue dashboard, from `switchyard operator token issue`' },
        adminCookie: { type: 'apiKey', in: 'cookie', name: 'sy_admin', description: 'Set by GET /admin/login?token=<operator token>' },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'sy_session',
          description:
            'A browser session, set by POST /v1/auth/login, /v1/auth/invite or /v1/auth/reset: the rights of the person\'s personal-account token. ' +
            'POST, PUT, PATCH and DELETE also need the header X-CSRF-Token (the csrfToken of the sign-in answer), and an Origin, when sent, equal to the service\'s own; else 403. ' +
            'A request with an Authorization header is judged by it alone.',
        },
      },
    },
  };
}
