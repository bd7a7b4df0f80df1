import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import request from 'supertest';
import { chromium, type BrowserContext } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg, TEST_SECRET } from '../helpers/fixtures';
import { signOperatorToken } from '../../shared/auth/operator-tokens';
import { QUEUE_NAMES } from '../../shared/queue/queue-names';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`dashboard browser test SKIPPED: no chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);

let h: TestApp;
let org: Awaited<ReturnType<typeof seedOrg>>;
let other: Awaited<ReturnType<typeof seedOrg>>;
let adminToken: string;
let memberToken: string;
let otherAdminToken: string;
let apiKey: string;
let operatorToken: string;

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0 } });
  org = await seedOrg(h.t.db);
  other = await seedOrg(h.t.db);
  adminToken = (await org.accounts.createUser({ organizationId: org.organizationId, email: 'admin@example.com', role: 'admin' })).token;
  memberToken = (await org.accounts.createUser({ organizationId: org.organizationId, email: 'member@example.com', role: 'member' })).token;
  otherAdminToken = (await other.accounts.createUser({ organizationId: other.organizationId, email: 'admin@b.example.com', role: 'admin' })).token;
  apiKey = (await seedKey(org.accounts, org.organizationId)).key;
  operatorToken = signOperatorToken(TEST_SECRET);
});
afterAll(() => h.close());

const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });

describe('queue dashboard access', () => {
  it('answers 401 without credentials or with a bad one, in the error envelope', async () => {
    const none = await request(h.app).get('/admin/queues');
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHORIZED');
    expect((await request(h.app).get('/admin/login')).status).toBe(401);
    // An operator token signed with another secret, and an expired one, are no operator tokens.
    for (const t of [signOperatorToken('another-secret'), signOperatorToken(TEST_SECRET, 60, Date.now() - 3_600_000)]) {
      expect((await request(h.app).get('/admin/queues/api/queues').set(bearer(t))).status).toBe(401);
      expect((await request(h.app).get(`/admin/login?token=${t}`)).status).toBe(401);
    }
  });

  it('refuses organization tokens of every role (owner included) and API keys with 403', async () => {
    for (const t of [org.ownerToken, adminToken, memberToken, other.ownerToken, otherAdminToken, apiKey]) {
      const res = await request(h.app).get('/admin/queues/api/queues').set(bearer(t));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      expect(res.body.error.message).toContain('switchyard operator token issue');
      expect(res.body.trace_id).toBe(res.headers['x-trace-id']);
      expect((await request(h.app).get('/admin/queues').set('Cookie', `sy_admin=${t}`)).status).toBe(403);
      expect((await request(h.app).get(`/admin/login?token=${t}`)).status).toBe(403);
    }
  });

  it("an owner or admin of another organization can neither read A's job payloads, nor pause a queue, nor add a job", async () => {
    const job = await h.app.locals.ctx.queues.text.add('text', { generationId: 'gen_a_secret', organizationId: org.organizationId, request: { input: 'the prompt of A' } });
    const text = h.app.locals.ctx.queues.text;
    for (const t of [other.ownerToken, otherAdminToken]) {
      const read = await request(h.app).get(`/admin/queues/api/queues/text/${job.id}`).set(bearer(t));
      expect(read.status).toBe(403);
      expect(JSON.stringify(read.body)).not.toContain('the prompt of A');
      const list = await request(h.app).get('/admin/queues/api/queues?activeQueue=text&status=waiting').set(bearer(t));
      expect(list.status).toBe(403);
      expect((await request(h.app).put('/admin/queues/api/queues/text/pause').set(bearer(t))).status).toBe(403);
      expect((await request(h.app).put('/admin/queues/api/queues/pause').set(bearer(t))).status).toBe(403);
      const add = await request(h.app).post('/admin/queues/api/queues/text/add').set(bearer(t)).send({ name: 'text', data: { generationId: 'gen_a_secret' } });
      expect(add.status).toBe(403);
    }
    expect(await text.isPaused()).toBe(false);
    expect(await text.getJobCounts('waiting')).toEqual({ waiting: 1 });
    await job.remove();
  });

  it('an operator token is no customer credential: every /v1 route refuses it', async () => {
    for (const [method, url] of [['get', '/v1/key'], ['get', '/v1/models'], ['get', '/v1/keys'], ['post', '/v1/chat/completions'], ['get', '/v2/balance']] as const) {
      const res = await request(h.app)[method](url).set(bearer(operatorToken)).send({});
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
  });

  it('serves the page and its API to an operator token, read-only, with customer content withheld', async () => {
    const page = await request(h.app).get('/admin/queues').set(bearer(operatorToken));
    expect(page.status).toBe(200);
    expect(page.text).toContain('<base href="/admin/queues/"');
    // Nothing from another origin (bull-board's own page links Google Fonts), on every page of the board.
    expect(page.text).not.toMatch(/https?:\/\//);
    expect((await request(h.app).get('/admin/queues/queue/text').set(bearer(operatorToken))).text).not.toMatch(/https?:\/\//);
    const api = await request(h.app).get('/admin/queues/api/queues').set({ Authorization: `bearer ${operatorToken}` });
    expect(api.status).toBe(200);
    expect(api.body.queues.map((q: { name: string }) => q.name).sort()).toEqual([...QUEUE_NAMES].sort());
    expect(api.body.queues.every((q: { readOnlyMode: boolean }) => q.readOnlyMode)).toBe(true);

    const text = h.app.locals.ctx.queues.text;
    const job = await text.add('text', { generationId: 'gen_visible', model: 'openai/gpt-4.1-mini', request: { input: 'a private prompt' } });
    const read = await request(h.app).get(`/admin/queues/api/queues/text/${job.id}`).set(bearer(operatorToken));
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.body)).toContain('gen_visible');
    expect(JSON.stringify(read.body)).not.toContain('a private prompt');

    // A callback URL shows where it goes, never its query string (a token) nor user:pass@; the callback job's too.
    const hook = 'https://ops:hunter2@hooks.example.com/cb?token=SECRET#FRAGSECRET';
    const media = await h.app.locals.ctx.queues.media.add('media', { generationId: 'gen_media', kind: 'audio', callBackUrl: hook });
    const callback = await h.app.locals.ctx.queues.callbacks.add('callback', { generationId: 'gen_media', url: hook });
    for (const [queue, id] of [['media', media.id], ['callbacks', callback.id]]) {
      const shown = JSON.stringify((await request(h.app).get(`/admin/queues/api/queues/${queue}/${id}`).set(bearer(operatorToken))).body);
      const listed = JSON.stringify((await request(h.app).get(`/admin/queues/api/queues?activeQueue=${queue}&status=latest`).set(bearer(operatorToken))).body);
      for (const seen of [shown, listed]) {
        for (const secret of ['SECRET', 'hunter2', 'ops:', 'FRAGSECRET']) expect(seen).not.toContain(secret);
        expect(seen).toContain('https://hooks.example.com/cb');
      }
    }
    await Promise.all([media.remove(), callback.remove()]);

    // No action changes a queue, not even for an operator.
    expect((await request(h.app).put('/admin/queues/api/queues/text/pause').set(bearer(operatorToken))).status).toBe(403);
    expect((await request(h.app).put('/admin/queues/api/queues/pause').set(bearer(operatorToken))).status).toBe(403);
    expect((await request(h.app).post('/admin/queues/api/queues/text/add').set(bearer(operatorToken)).send({ name: 'x', data: {} })).status).toBe(403);
    expect((await request(h.app).put(`/admin/queues/api/queues/text/${job.id}/clean`).set(bearer(operatorToken))).status).toBe(403);
    expect(await text.isPaused()).toBe(false);
    expect(await text.getJobCounts('waiting')).toEqual({ waiting: 1 });
    await job.remove();
  });

  it('logs a browser in with an HttpOnly, SameSite=Strict cookie and redirects to the dashboard', async () => {
    const res = await request(h.app).get(`/admin/login?token=${operatorToken}`);
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

describe("the dashboard shows every queue's recent work, text included", () => {
  let s: TestStack;
  let customer: StackOrg;
  beforeAll(async () => {
    s = await createTestStack({ env: { SYNC_WAIT_MS: '10000' }, knobs: { text: 'a private answer' } });
    customer = await s.seed();
  });
  afterAll(() => s?.close());

  type BoardJob = { id: string; data: Record<string, unknown> };
  const listed = async (status: 'completed') => {
    const res = await request(s.app).get(`/admin/queues/api/queues?activeQueue=text&status=${status}&page=1&jobsPerPage=10`).set(bearer(operatorToken));
    expect(res.status).toBe(200);
    return (res.body.queues as Array<{ name: string; jobs: BoardJob[] }>).find((q) => q.name === 'text')!.jobs;
  };

  it('lists a finished synchronous text request among the completed jobs of the text queue, its content withheld', async () => {
    const res = await request(s.app).post('/v1/responses').set(customer.auth).send({ model: STACK_MODELS.chat, input: 'a private prompt' });
    expect(res.status).toBe(200);
    expect(res.body.output_text).toBe('a private answer');
    // The reply may leave before the job is moved to the completed set.
    const job = await waitUntil(async () => (await listed('completed')).find((j) => j.id === res.body.id), 5000);
    expect(job).toMatchObject({ data: { generationId: res.body.id, mode: 'sync', apiType: 'responses', request: '[withheld: customer content]' } });
    expect(JSON.stringify(job)).not.toMatch(/a private (prompt|answer)/);
  });

  it('lists a request whose providers all failed among the completed jobs too (its generation ended: failed), its content withheld', async () => {
    s.fake.setKnobs({ status: 500 });
    const res = await request(s.app).post('/v1/chat/completions').set(customer.auth).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'another private prompt' }] });
    s.fake.reset();
    expect(res.status).toBe(502);
    const job = await waitUntil(async () => (await listed('completed')).find((j) => j.data.apiType === 'chat_completions'), 5000);
    expect(job).toMatchObject({ data: { mode: 'sync', organizationId: customer.organizationId } });
    expect(JSON.stringify(job)).not.toContain('another private prompt');
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

  it('renders every queue after logging in through /admin/login, with nothing from elsewhere and no console error', async () => {
    await h.app.locals.ctx.queues.media.add('probe', { note: 'visible in the dashboard' });
    const page = await browser.newPage();
    // Nothing leaves the machine: anything not served by the app under test is recorded and refused.
    const outside: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(base) || url.startsWith('data:')) return route.continue();
      outside.push(url);
      return route.abort();
    });
    const failures: string[] = [];
    page.on('response', (r) => r.status() >= 400 && failures.push(`${r.status()} ${r.url()}`));
    const console: string[] = [];
    page.on('console', (m) => m.type() === 'error' && console.push(m.text()));
    page.on('pageerror', (e) => console.push(e.message));

    const res = await page.goto(`${base}/admin/login?token=${encodeURIComponent(operatorToken)}`);
    expect(res?.status()).toBe(200);
    expect(page.url()).toBe(`${base}/admin/queues/`);
    for (const name of QUEUE_NAMES) await page.getByText(name, { exact: true }).first().waitFor({ timeout: 15_000 });

    const shot = path.join(os.tmpdir(), 'switchyard-dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(fs.statSync(shot).size).toBeGreaterThan(10_000);
    const text = await page.locator('body').innerText();
    for (const name of QUEUE_NAMES) expect(text).toContain(name);
    expect(failures).toEqual([]);
    expect(outside).toEqual([]);
    expect(console).toEqual([]);
    await page.close();
  }, 60_000);
});
