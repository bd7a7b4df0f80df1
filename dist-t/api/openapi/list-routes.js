"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.toOpenApiPath = toOpenApiPath;
exports.listRoutes = listRoutes;
/** `/v1/keys/:id` → `/v1/keys/{id}`; Express 5 wildcards `*name` → `{name}`. */
function toOpenApiPath(expressPath) {
    return expressPath.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
}
/**
 * Every route registered on an Express 5 app, walking `app.router.stack` and nested routers
 * (`layer.handle.stack`). Mounted sub-apps (the bull-board dashboard) are opaque and not listed.
 */
function listRoutes(app) {
    const out = [];
    const walk = (stack, prefix) => {
        for (const layer of stack) {
            if (layer.route) {
                const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
                for (const p of paths) {
                    for (const [method, on] of Object.entries(layer.route.methods)) {
                        if (on && method !== '_all')
                            out.push({ method, path: toOpenApiPath(prefix + String(p)) });
                    }
                }
            }
            else if (Array.isArray(layer.handle?.stack)) {
                const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
                walk(layer.handle.stack, prefix + mount);
            }
        }
    };
    walk(app.router.stack, '');
    return out;
}
