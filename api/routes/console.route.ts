import fs from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import { AppError } from '../../shared/errors/app-error';

export const CONSOLE_PATH = '/console';

/**
 * The console's own script, styles and images only, and requests to this origin only: no inline script or style
 * attribute, nothing from another origin, no framing, no form posted elsewhere (docs/console.md).
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/**
 * Where scripts/build-console.js put the console: dist/console, seen from the compiled route (dist/api/routes) or
 * from its TypeScript source (api/routes, as the tests run it).
 */
export function consoleDir(): string {
  const candidates = [path.resolve(__dirname, '..', '..', 'console'), path.resolve(__dirname, '..', '..', 'dist', 'console')];
  // build.json marks a build (the source folder console/ has an index.html too, with placeholders).
  return candidates.find((d) => existsSync(path.join(d, 'build.json'))) ?? candidates[1];
}

function secure(res: Response): void {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
}

/**
 * GET /console and every path under it (the application routes in the browser: /console/keys, /console/invite#...)
 * answer the console's page; /console/assets/{file} its built files, precompressed (brotli, gzip) where the browser
 * takes them. The page itself holds no data: everything it shows it fetches from the public API with the session.
 */
export function consoleRoutes(dir: string = consoleDir()): Router {
  const r = Router();
  r.get('/console/assets/:file', async (req: Request, res: Response) => {
    const file = String(req.params.file);
    const ext = path.extname(file);
    const missing = () => new AppError('NOT_FOUND', `No console asset ${file}`);
    if (!/^[\w.-]+$/.test(file) || !(ext in TYPES)) throw missing();
    const full = path.join(dir, 'assets', file);
    const encoding = req.acceptsEncodings('br', 'gzip', 'identity');
    const suffix = encoding === 'br' ? '.br' : encoding === 'gzip' ? '.gz' : '';
    let body: Buffer;
    try {
      body = await fs.readFile(full + suffix);
    } catch {
      throw missing();
    }
    secure(res);
    if (suffix) res.setHeader('Content-Encoding', encoding as string);
    res.setHeader('Vary', 'Accept-Encoding');
    // Names carry a content hash (icon.svg excepted): a new build is new names.
    res.setHeader('Cache-Control', file === 'icon.svg' ? 'public, max-age=3600' : 'public, max-age=31536000, immutable');
    res.type(TYPES[ext]).send(body);
  });
  r.get(['/console', '/console/*rest'], async (_req: Request, res: Response) => {
    secure(res);
    res.setHeader('Cache-Control', 'no-cache');
    let page: string;
    try {
      page = await fs.readFile(path.join(dir, 'index.html'), 'utf8');
    } catch {
      throw new AppError('SERVICE_UNAVAILABLE', 'The console is not built: run `npm run build` (or `npm run build:console`)');
    }
    res.type('html').send(page);
  });
  return r;
}
