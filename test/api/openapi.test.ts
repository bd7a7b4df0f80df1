import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import express from 'express';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { listRoutes } from '../../api/openapi/list-routes';
import { IDEMPOTENT_ROUTES, ROUTE_DOCS, type JsonSchema } from '../../api/openapi/route-docs';
import { buildOpenApi, toOpenApiSchema, type OpenApiDocument } from '../../api/openapi/build-openapi';
import { INIT_SCRIPT, SCALAR_SCRIPT } from '../../api/openapi/reference-page';
import { docsRoutes } from '../../api/routes/docs.route';

let h: TestApp;
let doc: OpenApiDocument;

beforeAll(async () => {
  h = await createTestApp();
  const res = await request(h.app).get('/openapi.json');
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(() => h.close());

const key = (r: { method: string; path: string }) => `${r.method.toUpperCase()} ${r.path}`;

/** Every schema object exported by `shared/schemas/*.schema.ts`: the ones routes validate with. */
function exportedSchemas(): Set<unknown> {
  const dir = path.join(__dirname, '../../shared/schemas');
  const out = new Set<unknown>();
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.schema.ts'))) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(path.join(dir, f)) as Record<string, unknown>;
    for (const v of Object.values(mod)) if (v && typeof v === 'object') out.add(v);
  }
  return out;
}

function walk(node: unknown, visit: (obj: Record<string, unknown>, at: string) => void, at = ''): void {
  if (Array.isArray(node)) node.forEach((n, i) => walk(n, visit, `${at}/${i}`));
  else if (node && typeof node === 'object') {
    visit(node as Record<string, unknown>, at);
    for (const [k, v] of Object.entries(node)) walk(v, visit, `${at}/${k}`);
  }
}

describe('OpenAPI document', () => {
  it('documents every route of the app, and only those', () => {
    const actual = new Set(listRoutes(h.app).map(key));
    const documented = ROUTE_DOCS.map(key);
    expect(documented.filter((k, i) => documented.indexOf(k) !== i)).toEqual([]); // no row twice
    const undocumented = [...actual].filter((k) => !documented.includes(k));
    const stale = documented.filter((k) => !actual.has(k));
    // A failure here: add a row to api/openapi/route-docs.ts for each undocumented route (or remove a stale one).
    expect({ undocumented, stale }).toEqual({ undocumented: [], stale: [] });
    const inDoc = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => key({ method: m, path: p })));
    expect(inDoc.sort()).toEqual([...documented].sort());
  });

  it('uses the very schema objects that validate requests, converted only by dropping ajv-only keywords', () => {
    const schemas = exportedSchemas();
    const rebuilt = buildOpenApi();
    for (const r of ROUTE_DOCS) {
      for (const s of [r.body, r.query].filter(Boolean) as JsonSchema[]) {
        expect({ route: key(r), exported: schemas.has(s) }).toEqual({ route: key(r), exported: true });
        expect(typeof s.$id).toBe('string');
        expect(doc.components.schemas[s.$id as string]).toEqual(toOpenApiSchema(s, (n) => String(n.$id)));
        expect(rebuilt.components.schemas[s.$id as string]).toEqual(doc.components.schemas[s.$id as string]);
      }
      const op = doc.paths[r.path][r.method];
      if (r.body) expect(op.requestBody!.content['application/json'].schema).toEqual({ $ref: `#/components/schemas/${String(r.body.$id)}` });
      if (r.query) {
        const props = Object.keys((r.query.properties ?? {}) as object);
        expect(op.parameters!.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(props);
      }
    }
  });

  it('is a consistent OpenAPI 3.1 document: refs resolve, ids are unique, errors use the envelope', () => {
    expect(doc.openapi).toBe('3.1.0');
    walk(doc, (obj, at) => {
      if (typeof obj.$ref === 'string') {
        const target = obj.$ref.replace(/^#\//, '').split('/').reduce<unknown>((n, k) => (n as Record<string, unknown> | undefined)?.[k], doc);
        expect({ at, ref: obj.$ref, resolves: target !== undefined }).toEqual({ at, ref: obj.$ref, resolves: true });
      }
    });
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      walk(schema, (obj, at) => {
        for (const k of ['$id', '$async', 'errorMessage', 'instanceof', 'regexp', 'transform']) {
          // `properties` maps names to schemas: a field may be called anything.
          if (k in obj && !at.endsWith('/properties')) throw new Error(`${name}${at} still has ${k}`);
        }
      });
    }
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    const envelope = { $ref: '#/components/schemas/ErrorResponse' };
    for (const [p, ops] of Object.entries(doc.paths)) {
      expect(p).not.toMatch(/[:*]/);
      for (const op of Object.values(ops)) {
        expect((op.responses.default as { content: Record<string, { schema: unknown }> }).content['application/json'].schema).toEqual(envelope);
        for (const [status, resp] of Object.entries(op.responses)) {
          if (/^[45]/.test(status)) expect((resp as { content: Record<string, { schema: unknown }> }).content['application/json'].schema).toEqual(envelope);
        }
        if (op['x-switchyard-auth'] === 'none') expect(op.security).toEqual([]);
        else expect(op.security.length).toBeGreaterThan(0);
      }
    }
    expect(doc.paths['/v1/balance'].get.deprecated).toBe(true);
    expect(doc.paths['/v1/keys/{id}'].patch.parameters).toContainEqual(expect.objectContaining({ name: 'id', in: 'path', required: true }));
  });
});

describe('operation labels', () => {
  it('are short plain labels: no Markdown, at most 60 characters, no trailing period (the sentence is the description)', () => {
    const bad = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => /[`*_[\]]/.test(op.summary) || op.summary.length > 60 || op.summary.endsWith('.'))
        .map(([m, op]) => `${m.toUpperCase()} ${p}: ${op.summary}`),
    );
    expect(bad).toEqual([]);
  });

  it('documents /admin/login as taking an operator token, as the dashboard checks', () => {
    const op = doc.paths['/admin/login'].get;
    expect(`${op.summary} ${op.description}`).not.toMatch(/owner|admin token/i);
    expect(op.description).toContain('?token=<operator token>');
  });
});

describe('the server the document names', () => {
  const text = (res: request.Response) => JSON.stringify(res.body);

  it('is never the request\'s Host: every request gets the one document, naming http://localhost:PORT when PUBLIC_BASE_URL is unset', async () => {
    const own = `http://localhost:${h.config.port}`;
    const evil = await request(h.app).get('/openapi.json').set('Host', 'evil.example');
    expect(evil.body.servers).toEqual([{ url: own }]);
    expect(text(evil)).not.toContain('evil.example');
    const samples = evil.body.paths['/v1/responses'].post['x-codeSamples'] as Array<{ label: string; source: string }>;
    expect(samples.map((s) => s.source.split('\n').find((l) => l.includes(own)))).toEqual([
      `curl ${own}/v1/responses \\`,
      `client = OpenAI(base_url="${own}/v1", api_key=os.environ["SWITCHYARD_API_KEY"])`,
      `const client = new OpenAI({ baseURL: '${own}/v1', apiKey: process.env.SWITCHYARD_API_KEY });`,
    ]);
    // A cache that ignores Host (or keys on the path alone) hands everyone the same reply: it names no caller's host.
    const other = await request(h.app).get('/openapi.json').set({ Host: 'api.example.com', 'X-Forwarded-Host': 'evil.example', 'X-Forwarded-Proto': 'https' });
    expect(other.text).toBe(evil.text);
  });

  it('is PUBLIC_BASE_URL when the operator sets it, whatever the Host', async () => {
    // The docs routes read nothing of the context but its configuration.
    const app = express().use(docsRoutes({ ...h.app.locals.ctx, config: { ...h.config, publicBaseUrl: 'https://gateway.example.org/' } }));
    const res = await request(app).get('/openapi.json').set('Host', 'internal:3000');
    expect(res.body.servers).toEqual([{ url: 'https://gateway.example.org' }]);
    expect(text(res)).toContain('curl https://gateway.example.org/v1/responses');
    expect(text(res)).not.toContain('internal:3000');
  });

  /** Runs the page's init.js as a browser would: `fetch` answered by the app, at `origin`; resolves to Scalar's configuration. */
  async function initIn(origin: string): Promise<Record<string, unknown>> {
    const init = await request(h.app).get(`/docs/assets/${INIT_SCRIPT}`);
    const document = await request(h.app).get('/openapi.json');
    return new Promise((resolve, reject) => {
      const browser = {
        location: { origin },
        fetch: async (url: string) => (url === '/openapi.json' ? { text: async () => document.text } : Promise.reject(new Error(`unexpected fetch ${url}`))),
        Scalar: { createApiReference: (_at: string, config: Record<string, unknown>) => resolve(config) },
        document: { getElementById: () => ({ set textContent(t: string) { reject(new Error(t)); } }) },
      };
      vm.runInNewContext(init.text, browser);
    });
  }

  it('is, in the /docs page, the origin the browser opened it on: its servers, its samples and its file URLs', async () => {
    const config = await initIn('https://opened.example:8443');
    expect(config).toMatchObject({ withDefaultFonts: false, telemetry: false, agent: { disabled: true }, mcp: { disabled: true } });
    const content = config.content as OpenApiDocument;
    expect(content.servers).toEqual([{ url: 'https://opened.example:8443' }]);
    const samples = content.paths['/v1/responses'].post['x-codeSamples'] as Array<{ source: string }>;
    expect(samples[0].source).toContain('curl https://opened.example:8443/v1/responses');
    expect(JSON.stringify(content)).not.toContain(`localhost:${h.config.port}`);
    // Opened where the document's own server is, the document is shown as it is.
    expect((await initIn(`http://localhost:${h.config.port}`)).content).toEqual(JSON.parse((await request(h.app).get('/openapi.json')).text));
  });
});

describe('Idempotency-Key in the document', () => {
  it('is a header parameter, with its 409, on every route that creates a generation and on no other', () => {
    const rows = new Set(ROUTE_DOCS.map((r) => `${r.method} ${r.path}`));
    for (const r of IDEMPOTENT_ROUTES) expect({ route: r, documented: rows.has(r) }).toEqual({ route: r, documented: true });
    for (const r of ROUTE_DOCS) {
      const op = doc.paths[r.path][r.method];
      const header = op.parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
      const expected = IDEMPOTENT_ROUTES.has(`${r.method} ${r.path}`);
      expect({ route: key(r), header: Boolean(header), conflict: '409' in op.responses || !expected }).toEqual({ route: key(r), header: expected, conflict: true });
    }
    expect(doc.paths['/v1/chat/completions'].post.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false, schema: expect.objectContaining({ maxLength: 255 }) }));
  });
});

describe('GET /docs', () => {
  it('serves the Scalar reference page with its scripts from this origin, and nothing from elsewhere', async () => {
    const res = await request(h.app).get('/docs');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    // No CDN: every script is ours, and the policy forbids any other origin.
    const scripts = [...res.text.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toEqual([`/docs/assets/${SCALAR_SCRIPT}`, `/docs/assets/${INIT_SCRIPT}`]);
    expect(res.text).not.toMatch(/https?:\/\//);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");

    const bundle = await request(h.app).get(`/docs/assets/${SCALAR_SCRIPT}`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers['content-type']).toMatch(/javascript/);
    expect(bundle.headers['content-encoding']).toBe('gzip');
    expect(bundle.headers['cache-control']).toContain('immutable');
    expect(bundle.text.length).toBeGreaterThan(1_000_000);

    const init = await request(h.app).get(`/docs/assets/${INIT_SCRIPT}`);
    expect(init.status).toBe(200);
    expect(init.text).toContain("Scalar.createApiReference('#app'");
    const config = JSON.parse(/const config = (.*);/.exec(init.text)![1]);
    expect(config).toMatchObject({ withDefaultFonts: false, telemetry: false, agent: { disabled: true }, mcp: { disabled: true } });
    expect(config.proxyUrl).toBeUndefined();

    const missing = await request(h.app).get('/docs/assets/other.js');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
  });
});
