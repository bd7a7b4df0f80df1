import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import express from 'express';
import { CONSOLE_CSP, consoleRoutes } from '../../api/routes/console.route';
import { buildConsoleOnce } from '../helpers/console-build';
import { errorHandler } from '../../api/middleware/error-handler';

let h: TestApp;
beforeAll(async () => {
  await buildConsoleOnce();
  h = await createTestApp();
}, 60_000);
afterAll(() => h.close());

describe('GET /console', () => {
  it('answers the page at /console and at every path under it (the browser routes), with a CSP that allows no inline script', async () => {
    for (const url of ['/console', '/console/', '/console/keys', '/console/history/gen_x', '/console/invite']) {
      const res = await request(h.app).get(url);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      // One script from our origin, no inline script or style, nothing from another origin.
      expect(res.text.match(/<script\b[^>]*>/g)).toEqual([expect.stringMatching(/^<script type="module" src="\/console\/assets\/app\.[0-9a-f]{10}\.js">$/)]);
      expect(res.text).not.toMatch(/<script\b[^>]*>[^<\s]/);
      expect(res.text).not.toMatch(/\sstyle=|\son[a-z]+=/i);
      expect(res.text).not.toMatch(/https?:\/\//);
    }
    const csp = CONSOLE_CSP.split(';').map((d) => d.trim());
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
  });

  it('serves the built script precompressed as the browser accepts it, and refuses names outside the build', async () => {
    const page = await request(h.app).get('/console');
    const src = /src="(\/console\/assets\/app\.[0-9a-f]+\.js)"/.exec(page.text)![1];
    const br = await request(h.app).get(src).set('Accept-Encoding', 'br').buffer(true).parse((res, cb) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => cb(null, Buffer.concat(chunks)));
    });
    expect(br.status).toBe(200);
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers['content-type']).toMatch(/^text\/javascript/);
    expect(br.headers['cache-control']).toContain('immutable');
    const plain = await request(h.app).get(src).set('Accept-Encoding', 'identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
    // supertest decodes the brotli body: the same script either way.
    expect((br.body as Buffer).toString()).toBe(plain.text);
    for (const bad of ['/console/assets/..%2F..%2Fpackage.json', '/console/assets/index.html', '/console/assets/nothing.js']) {
      const res = await request(h.app).get(bad);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });

  it('the API behind it is untouched: /v1 paths never reach the console route', async () => {
    const res = await request(h.app).get('/v1/keys');
    expect(res.status).toBe(401);
    expect(res.headers['content-security-policy']).toBeUndefined();
  });

  it('an unbuilt console answers 503 in the error envelope, not a stack trace', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-console-'));
    const app = express().use(consoleRoutes(empty)).use(errorHandler(h.app.locals.ctx.logger));
    const res = await request(app).get('/console');
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(res.body.error.message).toContain('npm run build');
    fs.rmSync(empty, { recursive: true, force: true });
  });
});
