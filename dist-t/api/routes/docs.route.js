"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.docsRoutes = docsRoutes;
const express_1 = require("express");
const build_openapi_1 = require("../openapi/build-openapi");
const reference_page_1 = require("../openapi/reference-page");
/** GET /openapi.json (OpenAPI 3.1 from the validating schemas) and GET /docs (the same, rendered by Scalar). No auth. */
function docsRoutes(ctx) {
    const r = (0, express_1.Router)();
    let doc;
    // Built on first use: the route table is complete by then, and apps that never serve docs pay nothing.
    const document = () => (doc ??= (0, build_openapi_1.buildOpenApi)({ serverUrl: ctx.config.publicBaseUrl }));
    r.get('/openapi.json', (_req, res) => {
        res.json(document());
    });
    r.get('/docs', (_req, res) => {
        res.setHeader('Content-Security-Policy', (0, reference_page_1.referenceCsp)(ctx.config.publicBaseUrl));
        res.type('html').send(reference_page_1.PAGE);
    });
    r.get('/docs/assets/:file', async (req, res, next) => {
        if (req.params.file === reference_page_1.INIT_SCRIPT) {
            res.setHeader('Cache-Control', 'no-cache');
            res.type('text/javascript').send(reference_page_1.INIT);
        }
        else if (req.params.file === reference_page_1.SCALAR_SCRIPT) {
            const b = await (0, reference_page_1.scalarBundle)();
            res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
            res.setHeader('Vary', 'Accept-Encoding');
            res.type('text/javascript');
            if (req.acceptsEncodings('gzip') === 'gzip') {
                res.setHeader('Content-Encoding', 'gzip');
                res.send(b.gzip);
            }
            else
                res.send(b.raw);
        }
        else
            next();
    });
    return r;
}
