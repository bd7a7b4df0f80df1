import { Router } from 'express';
import type { AppContext } from '../app-context';
import { buildOpenApi, type OpenApiDocument } from '../openapi/build-openapi';
import { renderDocsHtml } from '../openapi/render-docs';

/** GET /openapi.json (OpenAPI 3.1 from the validating schemas) and GET /docs (the same, as a readable page). No auth. */
export function docsRoutes(ctx: AppContext): Router {
  const r = Router();
  let doc: OpenApiDocument | undefined;
  let html: string | undefined;
  // Built on first use: the route table is complete by then, and apps that never serve docs pay nothing.
  const document = () => (doc ??= buildOpenApi({ serverUrl: ctx.config.publicBaseUrl }));

  r.get('/openapi.json', (_req, res) => {
    res.json(document());
  });
  r.get('/docs', (_req, res) => {
    html ??= renderDocsHtml(document());
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    res.type('html').send(html);
  });
  return r;
}
