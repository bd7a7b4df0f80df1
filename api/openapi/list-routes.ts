import type { Express } from 'express';

export interface ListedRoute {
  method: string;
  /** OpenAPI style (`/v1/keys/{id}`). */
  path: string;
}

interface LayerLike {
  route?: { path: unknown; methods: Record<string, boolean> };
  handle?: { stack?: LayerLike[] };
  rawPath?: unknown;
}

/** `/v1/keys/:id` → `/v1/keys/{id}`; Express 5 wildcards `*name` → `{name}`. */
export function toOpenApiPath(expressPath: string): string {
  return expressPath.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
}

/**
 * Every route registered on an Express 5 app, walking `app.router.stack` and nested routers
 * (`layer.handle.stack`). Mounted sub-apps (the bull-board dashboard) are opaque and not listed.
 */
export function listRoutes(app: Express): ListedRoute[] {
  const out: ListedRoute[] = [];
  const walk = (stack: LayerLike[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        for (const p of paths) {
          for (const [method, on] of Object.entries(layer.route.methods)) {
            if (on && method !== '_all') out.push({ method, path: toOpenApiPath(prefix + String(p)) });
          }
        }
      } else if (Array.isArray(layer.handle?.stack)) {
        const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
        walk(layer.handle.stack, prefix + mount);
      }
    }
  };
  walk((app as unknown as { router: { stack: LayerLike[] } }).router.stack, '');
  return out;
}
