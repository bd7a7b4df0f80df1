import { Router } from 'express';
import type { AppContext } from '../app-context';
import { buildOpenApi } from '../openapi/build-openapi';
import { EXAMPLE_ORIGIN } from '../openapi/examples';
import { INIT, INIT_SCRIPT, PAGE, SCALAR_SCRIPT, referenceCsp, scalarBundle } from '../openapi/reference-page';
import { filesBaseUrl } from '../../shared/services/files.service';

/** GET /openapi.json (OpenAPI 3.1 from the validating schemas) and GET /docs (the same, rendered by Scalar). No auth. */
export function docsRoutes(ctx: AppContext): Router {
  const r = Router();
  // Built and serialized on first use (about 16 ms and 8 ms, 120 KB): the route table is complete by then, and apps
  // that never serve docs pay nothing. Wherever the document names EXAMPLE_ORIGIN (its server, its code samples, the
  // file URLs of its examples) it names where clients reach this API: PUBLIC_BASE_URL, else http://localhost:PORT.
  // Never the request's Host header: the reply is the same for every request, so a cache that ignores Host cannot
  // hand one caller's origin to others. The /docs page shows its own origin in the browser (reference-page.ts INIT).
  let document: string | undefined;
  r.get('/openapi.json', (_req, res) => {
    document ??= JSON.stringify(buildOpenApi()).split(EXAMPLE_ORIGIN).join(filesBaseUrl(ctx.config));
    res.type('json').send(document);
  });
  r.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', referenceCsp(ctx.config.publicBaseUrl));
    res.type('html').send(PAGE);
  });
  r.get('/docs/assets/:file', async (req, res, next) => {
    if (req.params.file === INIT_SCRIPT) {
      res.setHeader('Cache-Control', 'no-cache');
      res.type('text/javascript').send(INIT);
    } else if (req.params.file === SCALAR_SCRIPT) {
      const b = await scalarBundle();
      res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
      res.setHeader('Vary', 'Accept-Encoding');
      res.type('text/javascript');
      if (req.acceptsEncodings('gzip') === 'gzip') {
        res.setHeader('Content-Encoding', 'gzip');
        res.send(b.gzip);
      } else res.send(b.raw);
    } else next();
  });
  return r;
}
