import { Router } from 'express';
import type { AppContext } from '../app-context';
import { buildOpenApi, type OpenApiDocument } from '../openapi/build-openapi';
import { INIT, INIT_SCRIPT, PAGE, SCALAR_SCRIPT, referenceCsp, scalarBundle } from '../openapi/reference-page';

/** GET /openapi.json (OpenAPI 3.1 from the validating schemas) and GET /docs (the same, rendered by Scalar). No auth. */
export function docsRoutes(ctx: AppContext): Router {
  const r = Router();
  let doc: OpenApiDocument | undefined;
  // Built on first use: the route table is complete by then, and apps that never serve docs pay nothing.
  const document = () => (doc ??= buildOpenApi({ serverUrl: ctx.config.publicBaseUrl }));

  r.get('/openapi.json', (_req, res) => {
    res.json(document());
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
