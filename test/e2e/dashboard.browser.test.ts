import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import request from 'supertest';
import { chromium, type BrowserContext } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg } from '../helpers/fixtures';
import { QUEUE_NAMES } from '../../shared/queue/queue-names';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`dashboard browser test SKIPPED: no chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);

let h: TestApp;
let org: Awaited<ReturnType<typeof seedOrg>>;
let adminToken: string;
let memberToken: string;
let apiKey: string;

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0 } });
  org = await seedOrg(h.t.db);
  adminToken = (await org.accounts.createUser({ organizationId: org.organizationId, email: 'admin@example.com', role: 'admin' })).token;
  memberToken = (await org.accounts.createUser({ organizationId: org.organizationId, email: 'member@example.com', role: 'member' })).token;
  apiKey = (await seedKey(org.accounts, org.organizationId)).key;
});
afterAll(() => h.close());

describe('queue dashboard access', () => {
  const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });

  it('answers 401 without credentials and 403 for an API key or a member token, in the error envelope', async () => {
    const none = await request(h.app).get('/admin/queues');
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHORIZED');
    for (const t of [apiKey, memberToken]) {
      const res = await request(h.app).get('/admin/queues/api/queues').set(bearer(t));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      expect(res.body.trace_id).toBe(res.headers['x-trace-id']);
    }
    expect((await request(h.app).get('/admin/queues').set('Cookie', `sy_admin=${memberToken}`)).status).toBe(403);
    expect((await request(h.app).get('/admin/login')).status).toBe(401);
    expect((await request(h.app).get(`/admin/login?token=${memberToken}`)).status).toBe(403);
    expect((await request(h.app).get(`/admin/login?token=${apiKey}`)).status).toBe(403);
  });

  it('serves the page and its API to owner and admin tokens by header', async () => {
    for (const t of [org.ownerToken, adminToken]) {
      const page = await request(h.app).get('/admin/queues').set(bearer(t));
      expect(page.status).toBe(200);
      expect(page.text).toContain('<base href="/admin/queues/"');
      const api = await request(h.app).get('/admin/queues/api/queues').set(bearer(t));
      expect(api.status).toBe(200);
      expect(api.body.queues.map((q: { name: string }) => q.name).sort()).toEqual([...QUEUE_NAMES].sort());
    }
    // The dashboard's mutating API works under Express 5 too (its own JSON parser, its own routes).
    const maintenance = h.app.locals.ctx.queues.maintenance;
    expect((await request(h.app).put('/admin/queues/api/queues/maintenance/pause').set(bearer(adminToken))).status).toBe(200);
    expect(await maintenance.isPaused()).toBe(true);
    expect((await request(h.app).put('/admin/queues/api/queues/maintenance/resume').set(bearer(adminToken))).status).toBe(200);
    expect(await maintenance.isPaused()).toBe(false);
  });

  it('logs a browser in with an HttpOnly, SameSite=Strict cookie and redirects to the dashboard', async () => {
    const res = await request(h.app).get(`/admin/login?token=${adminToken}`);
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/admin/queues/');
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^sy_admin=[^;]+; Path=\/admin; Max-Age=\d+; HttpOnly; SameSite=Strict/);
    const value = cookie.split(';')[0];
    const asset = await request(h.app).get('/admin/queues/').set('Cookie', value);
    expect(asset.status).toBe(200);
    const js = /src="(static\/js\/main[^"]+)"/.exec(asset.text)![1];
    const script = await request(h.app).get(`/admin/queues/${js}`).set('Cookie', value);
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
  });
});

(hasChromium ? describe : describe.skip)('queue dashboard in a headless browser', () => {
  let server: Server;
  let browser: BrowserContext;
  let userDataDir: string;
  let base: string;

  beforeAll(async () => {
    server = await new Promise<Server>((resolve) => {
      const s = h.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-chromium-'));
    // A fresh profile per run: playwright passes it as --user-data-dir.
    browser = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  it('renders every queue after logging in through /admin/login', async () => {
    await h.app.locals.ctx.queues.media.add('probe', { note: 'visible in the dashboard' });
    const page = await browser.newPage();
    // Nothing leaves the machine: anything not served by the app under test is refused.
    await page.route('**/*', (route) => (route.request().url().startsWith(base) ? route.continue() : route.abort()));
    const failures: string[] = [];
    page.on('response', (r) => r.status() >= 400 && failures.push(`${r.status()} ${r.url()}`));

    const res = await page.goto(`${base}/admin/login?token=${encodeURIComponent(org.ownerToken)}`);
    expect(res?.status()).toBe(200);
    expect(page.url()).toBe(`${base}/admin/queues/`);
    for (const name of QUEUE_NAMES) await page.getByText(name, { exact: true }).first().waitFor({ timeout: 15_000 });

    const shot = path.join(os.tmpdir(), 'switchyard-dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(fs.statSync(shot).size).toBeGreaterThan(10_000);
    const text = await page.locator('body').innerText();
    for (const name of QUEUE_NAMES) expect(text).toContain(name);
    expect(failures).toEqual([]);
    await page.close();
  }, 60_000);
});
