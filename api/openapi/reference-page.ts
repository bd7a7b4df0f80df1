import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);

/** The reference renderer (docs/api-reference.md): Scalar's standalone bundle, served from node_modules. */
// The package exports neither its package.json nor the browser bundle: find them beside its entry (dist/index.js).
const SCALAR_DIST = path.dirname(require.resolve('@scalar/api-reference'));
const SCALAR_VERSION = (JSON.parse(fs.readFileSync(path.join(SCALAR_DIST, '..', 'package.json'), 'utf8')) as { version: string }).version;
/** Asset file names under /docs/assets/: the bundle's carries the version, so browsers may cache it for good. */
export const SCALAR_SCRIPT = `scalar-${SCALAR_VERSION}.js`;
export const INIT_SCRIPT = 'init.js';

/**
 * Scalar's configuration: nothing leaves Switchyard. No web fonts, no telemetry, no agent or MCP integration,
 * no request proxy ("try it" calls this origin directly), no link to Scalar's hosted client, the document
 * offered as JSON only.
 */
export const SCALAR_CONFIG = {
  title: 'Switchyard API',
  theme: 'default',
  layout: 'modern',
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  hideClientButton: true,
  showDeveloperTools: 'never',
  documentDownloadType: 'json',
  persistAuth: false,
  // "Models" is one of our tags (GET /v1/models); the components section takes OpenAPI's word.
  modelsSectionLabel: 'Schemas',
  // "Try it" authenticates with an API key (Authorization: Bearer sy_...).
  authentication: { preferredSecurityScheme: 'apiKey' },
  // The main routes show their x-codeSamples first (curl, Python openai, Node openai: api/openapi/examples.ts);
  // every operation also has Scalar's generated curl, Python requests and fetch. No defaultHttpClient: it would
  // take precedence over the x-codeSamples.
  hiddenClients: {
    c: true, clojure: true, csharp: true, dart: true, fsharp: true, go: true, http: true, java: true, julia: true,
    kotlin: true, objc: true, ocaml: true, php: true, powershell: true, r: true, ruby: true, rust: true, swift: true,
    shell: ['httpie', 'wget'], python: ['python3', 'httpx_sync', 'httpx_async', 'aiohttp'], node: ['axios', 'ofetch', 'undici'],
    js: ['axios', 'ofetch', 'jquery', 'xhr'],
  },
};

/** GET /docs: the page loads the bundle and init.js, which starts Scalar on /openapi.json. */
export const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchyard API reference</title></head>
<body><div id="app"></div>
<noscript>The reference needs JavaScript; the OpenAPI 3.1 document is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<script src="/docs/assets/${SCALAR_SCRIPT}"></script>
<script src="/docs/assets/${INIT_SCRIPT}"></script>
</body></html>`;

/**
 * init.js: fetches /openapi.json and starts Scalar on it. The document names the server PUBLIC_BASE_URL (else
 * http://localhost:PORT), whatever the request's Host (a shared cache may hand one reply to everyone); the page, in the
 * browser, writes the origin it was opened on in that server's place, so its samples and "try it" call this origin.
 */
export const INIT = `{
  const config = ${JSON.stringify(SCALAR_CONFIG)};
  fetch('/openapi.json')
    .then((r) => r.text())
    .then((text) => {
      const server = JSON.parse(text).servers[0].url;
      const content = JSON.parse(server === location.origin ? text : text.split(server).join(location.origin));
      Scalar.createApiReference('#app', { ...config, content });
    })
    .catch((e) => (document.getElementById('app').textContent = 'The OpenAPI document could not be loaded: ' + e.message));
}
`;

/**
 * The page's Content-Security-Policy. Scalar styles itself with inline <style> elements; everything else comes from
 * this origin, and "try it" may call only this origin and the document's server (PUBLIC_BASE_URL, when set).
 */
export function referenceCsp(publicBaseUrl?: string): string {
  const server = publicBaseUrl ? ` ${new URL(publicBaseUrl).origin}` : '';
  return `default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'${server}; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`;
}

/**
 * The bundle, read and compressed once on first use (4.3 MB, 1.3 MB gzipped), off the event loop: requests for other
 * routes are not held up by it.
 */
let bundle: Promise<{ raw: Buffer; gzip: Buffer }> | undefined;
export function scalarBundle(): Promise<{ raw: Buffer; gzip: Buffer }> {
  bundle ??= (async () => {
    const raw = await fs.promises.readFile(path.join(SCALAR_DIST, 'browser', 'standalone.js'));
    return { raw, gzip: await gzipAsync(raw) };
  })();
  // A failed read is retried on the next request rather than remembered.
  bundle.catch(() => (bundle = undefined));
  return bundle;
}
