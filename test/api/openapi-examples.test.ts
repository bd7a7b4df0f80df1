import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { ajv, queryAjv } from '../../shared/schemas/ajv';
import { ROUTE_DOCS, type JsonSchema } from '../../api/openapi/route-docs';
import { buildOpenApi, EXAMPLES } from '../../api/openapi/build-openapi';
import { CODE_SAMPLES } from '../../api/openapi/examples';

const key = (r: { method: string; path: string }) => `${r.method.toUpperCase()} ${r.path}`;
const errorsOf = (v: { errors?: unknown }) => JSON.stringify(v.errors ?? null);
/** ajv's useDefaults fills defaults in place: validate a copy, never the example itself. */
const copy = <T>(x: T): T => structuredClone(x);

/** Response schemas are not compiled anywhere else: a fresh instance each, so `$id`s never clash. */
function responseValidator(schema: JsonSchema) {
  return addFormats(new Ajv({ allErrors: true, strict: false })).compile(schema as object);
}

describe('examples in the OpenAPI document', () => {
  const doc = buildOpenApi();

  it('has a request example (when the route takes a body or query) and a response example for every operation', () => {
    const missing: string[] = [];
    for (const r of ROUTE_DOCS) {
      const ex = EXAMPLES[key(r)];
      if (!ex) missing.push(`${key(r)}: no examples`);
      else {
        if (r.body && ex.request === undefined) missing.push(`${key(r)}: no request example`);
        if (r.query && ex.query === undefined) missing.push(`${key(r)}: no query example`);
      }
    }
    const stale = Object.keys(EXAMPLES).filter((k) => !ROUTE_DOCS.some((r) => key(r) === k));
    expect({ missing, stale }).toEqual({ missing: [], stale: [] });
  });

  it('validates every request example against the very ajv schema the route validates with', () => {
    for (const r of ROUTE_DOCS) {
      const ex = EXAMPLES[key(r)];
      if (r.body) {
        const validate = ajv.compile(r.body as object);
        expect({ route: key(r), valid: validate(copy(ex.request)), errors: errorsOf(validate) }).toEqual({ route: key(r), valid: true, errors: 'null' });
        expect(doc.paths[r.path][r.method].requestBody!.content['application/json'].example).toEqual(ex.request);
      }
      if (r.query) {
        // As a query string carries them: strings, coerced by the query schema.
        const asStrings = Object.fromEntries(Object.entries(ex.query!).map(([k, v]) => [k, String(v)]));
        const validate = queryAjv.compile(r.query as object);
        expect({ route: key(r), valid: validate(asStrings), errors: errorsOf(validate) }).toEqual({ route: key(r), valid: true, errors: 'null' });
        for (const [name, value] of Object.entries(ex.query!)) {
          expect(doc.paths[r.path][r.method].parameters!.find((p) => p.in === 'query' && p.name === name)?.example).toEqual(value);
        }
      }
    }
  });

  it('validates every response example against its response schema, and writes it into the document', () => {
    let validated = 0;
    for (const r of ROUTE_DOCS) {
      const ex = EXAMPLES[key(r)];
      const ok = typeof r.response === 'string' ? { description: r.response } : r.response;
      if (ok.schema) {
        const validate = responseValidator(ok.schema);
        expect({ route: key(r), valid: validate(copy(ex.response)), errors: errorsOf(validate) }).toEqual({ route: key(r), valid: true, errors: 'null' });
        validated++;
      }
      const resp = doc.paths[r.path][r.method].responses[String(ok.status ?? 200)] as { content?: Record<string, { example?: unknown }> };
      if (ok.status === 302) continue;
      const first = Object.values(resp.content ?? {})[0];
      expect({ route: key(r), example: first?.example }).toEqual({ route: key(r), example: ex.response });
    }
    expect(validated).toBeGreaterThanOrEqual(12);
  });

  it('has curl, Python (openai) and Node (openai) samples for the main routes', () => {
    for (const route of ['POST /v1/responses', 'POST /v1/chat/completions', 'POST /v1/embeddings', 'GET /v1/models', 'POST /v1/images/generations']) {
      const [method, path] = route.split(' ');
      const samples = doc.paths[path][method.toLowerCase()]['x-codeSamples']!;
      expect(samples.map((s) => s.label)).toEqual(['curl', 'Python (openai)', 'Node (openai)']);
      expect(samples[1].source).toMatch(/OpenAI\(base_url="http:\/\/localhost:3000\/v1"/);
      expect(samples[2].source).toMatch(/new OpenAI\(\{ baseURL: 'http:\/\/localhost:3000\/v1'/);
      const curlBody = /-d '(.*)'$/s.exec(samples[0].source)?.[1];
      const route0 = ROUTE_DOCS.find((r) => key(r) === route)!;
      if (route0.body) {
        const validate = ajv.compile(route0.body as object);
        expect({ route, valid: validate(JSON.parse(curlBody!)), errors: errorsOf(validate) }).toEqual({ route, valid: true, errors: 'null' });
      }
    }
    expect(Object.keys(CODE_SAMPLES).length).toBe(5);
  });
});
