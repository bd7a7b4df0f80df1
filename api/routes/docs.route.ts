import { Router, type Request } from 'express';
import type { AppContext } from '../app-context';
import { buildOpenApi } from '../openapi/build-openapi';
import { EXAMPLE_ORIGIN } from '../openapi/examples';
import { INIT, INIT_SCRIPT, PAGE, SCALAR_SCRIPT, referenceCsp, scalarBundle } from '../openapi/reference-page';
import { filesBaseUrl } from '../../shared/services/files.service';

/**
 * Where clients reach this API: PUBLIC_BASE_URL when the operator sets it (the public address behind a proxy), else
 * the origin of the request itself. Express reads X-Forwarded-Proto and X-Forwarded-Host only with `trust proxy`, which
 * the app does not set: a request names its origin by its Host header alone.
 */
export function apiOrigin(req: Pick<Request, 'protocol' | 'host'>, config: { publicBaseUrl?: string; port: number }): string {
  if (config.publicBaseUrl) return filesBaseUrl(config);
  try {
    // `origin` drops anything a Host header may carry beyond a host and port.
    return new URL(`${req.protocol}://${req.host}`).origin;
  } catch {
    return EXAMPLE_ORIGIN;
  }
}

/** GET /openapi.json (OpenAPI 3.1 from the validating schemas) and GET /docs (the same, rendered by Scalar). No auth. */
export function docsRoutes(ctx: AppContext): Router {
  const r = Router();
  // Built and serialized on first use (about 16 ms and 8 ms, 120 KB): the route table is complete by then, and apps
  // that never serve docs pay nothing. Each request then joins the text around its own origin, wherever the
  // document names EXAMPLE_ORIGIN (its server, its code samples, the file URLs of its examples).
  let parts: string[] | undefined;
  const document = (origin: string) => (parts ??= JSON.stringify(buildOpenApi()).split(EXAMPLE_ORIGIN)).join(origin);

  r.get('/openapi.json', (req, res) => {
    res.type('json').send(document(apiOrigin(req, ctx.config)));
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
