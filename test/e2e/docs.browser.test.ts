import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { chromium, type BrowserContext } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg } from '../helpers/fixtures';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`API reference browser test SKIPPED: no chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);

let h: TestApp;
let apiKey: string;
let server: Server;
let base: string;

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0 } });
  const org = await seedOrg(h.t.db);
  apiKey = (await seedKey(org.accounts, org.organizationId)).key;
  server = await new Promise<Server>((resolve) => {
    const s = h.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await h.close();
});

(hasChromium ? describe : describe.skip)('API reference at /docs in a headless browser', () => {
  let browser: BrowserContext;
  let userDataDir: string;

  beforeAll(async () => {
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-chromium-'));
    browser = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      viewport: { width: 1400, height: 1000 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  it('loads with no request beyond Switchyard, finds an operation by search, and sends a "try it" request with a key', async () => {
    const page = await browser.newPage();
    // Every request to another origin is recorded and refused: the page must work in a closed network.
    const outside: string[] = [];
    const failures: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(base) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      outside.push(url);
      return route.abort();
    });
    page.on('response', (r) => r.status() >= 400 && failures.push(`${r.status()} ${r.url()}`));
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // Scalar warns on the console about a deprecated option (`[DEPRECATED] ...`): the configuration has none.
    const console: string[] = [];
    page.on('console', (m) => (m.type() === 'warning' || m.type() === 'error') && console.push(`${m.type()}: ${m.text()}`));

    const res = await page.goto(`${base}/docs`);
    expect(res?.status()).toBe(200);
    await page.getByText('Switchyard API', { exact: false }).first().waitFor({ timeout: 30_000 });

    await page.getByText('curl', { exact: true }).first().waitFor({ timeout: 10_000 }).catch(() => undefined);
    await page.screenshot({ path: path.join(os.tmpdir(), 'switchyard-docs-page.png'), fullPage: false });

    // Search (Ctrl+K or the sidebar's search button) finds an operation by its label.
    await page.keyboard.press('Control+k');
    const search = page.getByRole('combobox').or(page.locator('input[type="search"], input[placeholder*="Search" i]')).first();
    await search.waitFor({ timeout: 10_000 });
    await search.fill('Get the calling API key');
    const hit = page.getByRole('option').filter({ hasText: 'Get the calling API key' }).first();
    await hit.waitFor({ timeout: 10_000 });
    await hit.click();
    await page.waitForURL(/get_v1_key|v1\/key|account/i, { timeout: 10_000 }).catch(() => undefined);

    // "Try it": the operation's Test Request button opens the client; the key goes in as the bearer token.
    const operation = page.locator('section, [id*="v1/key" i]').filter({ hasText: 'Get the calling API key' }).first();
    await operation.getByRole('button', { name: /test request/i }).first().click({ timeout: 10_000 });
    const token = page.locator('input[placeholder*="Token" i], input[placeholder*="Bearer" i], [data-testid*="token" i] input').first();
    await token.waitFor({ timeout: 10_000 });
    await token.fill(apiKey);
    const sent = page.waitForResponse((r) => r.url() === `${base}/v1/key` && r.request().method() === 'GET', { timeout: 15_000 });
    await page.getByRole('button', { name: /^send/i }).first().click();
    const reply = await sent;
    expect(reply.status()).toBe(200);
    expect(reply.request().headers().authorization).toBe(`Bearer ${apiKey}`);
    const body = (await reply.json()) as { label: string };
    expect(body.label).toMatch(/^sy_\.\.\./);
    await page.getByText('200', { exact: false }).first().waitFor({ timeout: 10_000 });

    await page.screenshot({ path: path.join(os.tmpdir(), 'switchyard-docs.png'), fullPage: false });
    expect(outside).toEqual([]);
    expect(failures).toEqual([]);
    expect(errors).toEqual([]);
    expect(console).toEqual([]);
    await page.close();
  }, 90_000);

  it('shows the curl, Python (openai) and Node (openai) samples of POST /v1/responses', async () => {
    const page = await browser.newPage();
    const outside: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(base) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      outside.push(url);
      return route.abort();
    });
    await page.goto(`${base}/docs#tag/text/POST/v1/responses`);
    // The operation's own sample is shown first: curl against the origin the page came from, with the key from the
    // environment.
    await page.getByText('-H "Authorization: Bearer $SWITCHYARD_API_KEY"').first().waitFor({ timeout: 30_000 });
    const sample = page.locator('pre, code').filter({ hasText: `curl ${base}/v1/responses` }).first();
    await sample.waitFor({ timeout: 10_000 });
    // The sample picker lists the SDK samples; choosing Python shows the openai client call.
    const picker = page.getByRole('button', { name: /^curl$/i }).or(page.locator('button').filter({ hasText: /^curl$/ })).first();
    await picker.click({ timeout: 10_000 });
    await page.getByText('Node (openai)', { exact: true }).first().waitFor({ timeout: 10_000 });
    await page.getByText('Python (openai)', { exact: true }).first().click();
    await page.getByText('client.responses.create(model="openai/gpt-4.1-mini", input="Hello!")').first().waitFor({ timeout: 10_000 });
    await page.getByText(`OpenAI(base_url="${base}/v1"`, { exact: false }).first().waitFor({ timeout: 10_000 });
    expect(await page.getByText('localhost:3000', { exact: false }).count()).toBe(0);
    await page.screenshot({ path: path.join(os.tmpdir(), 'switchyard-docs-samples.png'), fullPage: false });
    expect(outside).toEqual([]);
    await page.close();
  }, 60_000);
});
