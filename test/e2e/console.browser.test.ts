import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { createTestStack, STACK_MODELS, type TestStack } from '../helpers/test-stack';
import { TEST_SECRET } from '../helpers/fixtures';
import { runCli } from '../../shared/cli/main';
import { buildConsoleOnce } from '../helpers/console-build';

/**
 * The console (/console) in headless Chromium against the running service, as a person clicks (issue 41's proof):
 * accept an invite, create a key, call the API with it through the openai SDK, see the spend in the chart and the
 * row in the history, invite a member who signs in and sees only itself, revoke, sign out. Every page is checked with
 * axe-core (no serious or critical violation), for requests to any other origin, for CSP violations and page errors;
 * a key name and a model answer carrying `<script>` render as text.
 *
 * CONSOLE_SCREENSHOTS=1 (npm run console:screenshots) also writes each page, in English and Russian, to docs/console/.
 */
/** The page's globals, in the functions page.evaluate runs in the browser (the project's types have no DOM). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const window: any, document: any, localStorage: any;
type Document = unknown;

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`console browser test SKIPPED: no chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
const SHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? path.join(__dirname, '..', '..', 'docs', 'console') : null;

const PASSWORD = 'correct horse battery staple';
const EVIL_NAME = '<script>window.__xss = "key"</script><img src=x onerror="window.__xss = \'img\'">';
const EVIL_ANSWER = 'Hello <script>window.__xss = "answer"</script><img src=y onerror="window.__xss = \'answer-img\'"> there';
jest.setTimeout(60_000);
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let s: TestStack;
let browser: BrowserContext;
let userDataDir: string;
/** Every request the pages made to anything but the service (refused), every CSP report, page error and console error. */
const outside: string[] = [];
const problems: string[] = [];

async function cli(args: string[]): Promise<Record<string, string>> {
  let out = '';
  let err = '';
  const code = await runCli([...args, '--json'], {
    stdout: { write: (x: string) => (out += x) },
    stderr: { write: (x: string) => (err += x) },
    env: { DATABASE_URL: s.t.url, SWITCHYARD_SECRET: TEST_SECRET, PUBLIC_BASE_URL: s.url },
  });
  expect({ code, err }).toEqual({ code: 0, err: '' });
  return JSON.parse(out);
}

async function newPage(): Promise<Page> {
  const page = await browser.newPage();
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${s.url}/`) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    outside.push(url);
    return route.abort();
  });
  page.on('console', (m) => m.type() === 'error' && !/status of 40[13]/.test(m.text()) && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('dialog', (d) => void d.accept());
  return page;
}

/** axe-core on the page as it stands: no serious or critical violation. Evaluated over CDP, as the CSP allows no injected script. */
async function axe(page: Page, where: string): Promise<void> {
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const w = window as unknown as { axe: { run(c: Document, o: unknown): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } };
    const r = await w.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  expect({ where, violations: violations.filter((v) => v.impact === 'serious' || v.impact === 'critical') }).toEqual({ where, violations: [] });
}

async function go(page: Page, section: string, heading: RegExp): Promise<void> {
  await page.locator('nav.side a', { hasText: section }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });
}

async function noXss(page: Page): Promise<void> {
  expect(await page.evaluate(() => (window as unknown as { __xss?: string }).__xss)).toBeUndefined();
  expect(await page.locator('main script, main img').count()).toBe(0);
}

(hasChromium ? describe : describe.skip)('the console in a headless browser, as a person clicks', () => {
  let page: Page;
  let ownerInviteUrl: string;
  let apiKey: string;
  let completionId: string;
  let memberInviteUrl: string;

  beforeAll(async () => {
    await buildConsoleOnce();
    s = await createTestStack({ env: { BATCH_POLL_MS: '50' }, knobs: { promptTokens: 1200, completionTokens: 300, text: EVIL_ANSWER } });
    const org = await cli(['org', 'create', '--name', 'Acme <b>Labs</b>', '--balance', '100', '--owner-email', 'owner@acme.test']);
    ownerInviteUrl = org.ownerInviteUrl;
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-chromium-'));
    browser = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      locale: 'en-US',
      viewport: { width: 1280, height: 860 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await newPage();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await s?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  afterEach(() => {
    const seen = { outside: outside.splice(0), problems: problems.splice(0) };
    expect(seen).toEqual({ outside: [], problems: [] });
  });

  it('accepts the owner invite from the link the CLI printed (token in the fragment) and lands on the overview', async () => {
    expect(ownerInviteUrl).toMatch(/\/console\/invite#token=/);
    await page.goto(ownerInviteUrl);
    await page.getByRole('heading', { level: 1, name: 'Accept the invitation' }).waitFor();
    await axe(page, 'invite');
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('Repeat the password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Save and sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    // The token left the address bar; the organization's name (with markup in it) is text.
    expect(page.url()).toBe(`${s.url}/console`);
    expect(await page.locator('.org').textContent()).toBe('Acme <b>Labs</b>');
    await page.locator('[data-tile="balance"]').getByText('100.00').waitFor();
    await axe(page, 'overview (empty)');
  });

  it('creates a key with a limit, shown once with copy; its <script> name renders as text', async () => {
    await go(page, 'Keys', /^Keys$/);
    await page.getByLabel('Name').fill(EVIL_NAME);
    await page.getByLabel('Limit, RUB').fill('25');
    await page.locator('form.grid-form select[name="period"]').selectOption('monthly');
    await page.getByLabel('Requests per minute').fill('120');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const secret = page.locator('input.secret');
    await secret.waitFor();
    apiKey = await secret.inputValue();
    expect(apiKey).toMatch(/^sy_/);
    await page.getByText('it is shown only once').waitFor();

    const row = page.locator('tr[data-key]');
    await expect(row.locator('th.key-name').textContent()).resolves.toBe(EVIL_NAME);
    await expect(row.textContent()).resolves.toContain('monthly');
    await noXss(page);
    await axe(page, 'keys');
    await page.getByRole('button', { name: 'Done' }).click();
    await expect(secret.count()).resolves.toBe(0);
  });

  it('the key calls the API through the openai SDK; the spend shows in the chart, the top keys and the history', async () => {
    const client = new OpenAI({ apiKey, baseURL: `${s.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }] });
    completionId = completion.id;
    const cost = (completion.usage as unknown as { cost: number }).cost;
    expect(cost).toBeGreaterThan(0);
    const shown = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'RUB', minimumFractionDigits: 2, maximumFractionDigits: cost < 0.01 ? 6 : 2 }).format(cost);

    await go(page, 'Overview', /^Overview$/);
    await page.locator('[data-tile="day"]').getByText(shown).waitFor();
    await page.locator('figure.chart rect title', { hasText: STACK_MODELS.chat }).first().waitFor({ state: 'attached' });
    await expect(page.locator('.legend').textContent()).resolves.toContain(`${STACK_MODELS.chat}: ${shown}`);
    await expect(page.locator('.barlist').first().textContent()).resolves.toContain(EVIL_NAME);
    await noXss(page);

    await go(page, 'Activity', /^Activity$/);
    await expect(page.locator('table').first().textContent()).resolves.toContain(shown);
    await axe(page, 'activity');

    await go(page, 'History', /^History$/);
    const row = page.locator(`tr[data-generation="${completionId}"]`);
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain(shown);
    await axe(page, 'history');
    await row.getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: /Generation/ }).waitFor();
    await page.locator('.facts .cost', { hasText: shown }).waitFor();
    await page.getByRole('heading', { name: 'Attempts and fallbacks' }).waitFor();
    await axe(page, 'history detail');
    await noXss(page);
  });

  it('streams a reply in the playground: the model answer carrying <script> is text; cost and balance move shown', async () => {
    await go(page, 'Playground', /^Playground$/);
    await page.locator('select[name="model"]').selectOption(STACK_MODELS.chat);
    await page.getByLabel('Message').fill('Say hello');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.play-cost').waitFor();
    await expect(page.locator('.reply').textContent()).resolves.toBe(EVIL_ANSWER);
    expect(await page.locator('.play-cost').textContent()).toMatch(/RUB|₽/);
    const amounts = await page.locator('.outcome dd').allTextContents();
    // Available before and after: the reply's cost left the balance.
    expect(amounts[2]).not.toBe(amounts[3]);
    // The generation made with the session (no key) is in the history under "Without a key", the SDK's is not.
    await go(page, 'History', /^History$/);
    await page.locator('select[name="key"]').selectOption('-');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('Page 1 of 1 · 1 generations').waitFor();
    expect(await page.locator(`tr[data-generation="${completionId}"]`).count()).toBe(0);
    await noXss(page);
    await axe(page, 'playground');
  });

  it('stops a playground reply mid-stream: the part received stays, the balance after is shown', async () => {
    const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    s.fake.setKnobs({ promptTokens: 100, completionTokens: 40, text: words, chunkDelayMs: 300 });
    try {
      await go(page, 'Playground', /^Playground$/);
      await page.locator('select[name="model"]').selectOption(STACK_MODELS.chat);
      await page.getByLabel('Message').fill('Count slowly');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.locator('.reply', { hasText: 'word0' }).waitFor();
      await page.getByRole('button', { name: 'Stop' }).click();
      await page.locator('.play-after').waitFor();
      const got = (await page.locator('.reply').textContent())!;
      expect(got.startsWith('word0')).toBe(true);
      expect(got).not.toContain('word39');
      await expect(page.getByRole('button', { name: 'Send' }).isEnabled()).resolves.toBe(true);
    } finally {
      s.fake.setKnobs({ promptTokens: 1200, completionTokens: 300, text: EVIL_ANSWER });
    }
  });

  it('invites a member (the invite link shown), who signs in and sees only itself', async () => {
    await go(page, 'Members', /^Members$/);
    await page.getByLabel('E-mail').fill('member@acme.test');
    await page.locator('form.grid-form select[name="role"]').selectOption('member');
    await page.getByLabel('Personal limit').fill('5');
    await page.getByRole('button', { name: 'Invite' }).click();
    const link = page.locator('input.secret');
    await link.waitFor();
    memberInviteUrl = await link.inputValue();
    expect(memberInviteUrl).toMatch(new RegExp(`^${s.url}/console/invite#token=`));
    await page.locator('tr[data-member="member@acme.test"]').getByText('invited').waitFor();
    await axe(page, 'members');

    // The member, in a browser of its own (a second profile: no cookie of the owner's).
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-chromium-'));
    const memberBrowser = await chromium.launchPersistentContext(other, { executablePath: CHROMIUM, locale: 'en-US', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    try {
      const mp = await memberBrowser.newPage();
      await mp.route('**/*', (route) => (route.request().url().startsWith(`${s.url}/`) ? route.continue() : (outside.push(route.request().url()), route.abort())));
      await mp.goto(memberInviteUrl);
      await mp.getByLabel('New password').fill(PASSWORD);
      await mp.getByLabel('Repeat the password').fill(PASSWORD);
      await mp.getByRole('button', { name: 'Save and sign in' }).click();
      await mp.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      expect(await mp.locator('.me').textContent()).toContain('member@acme.test');
      await mp.locator('nav.side a', { hasText: 'Members' }).click();
      await mp.locator('tr[data-member]').first().waitFor();
      expect(await mp.locator('tr[data-member]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-member')))).toEqual(['member@acme.test']);
      expect(await mp.getByRole('button', { name: 'Invite' }).count()).toBe(0);
      await mp.locator('nav.side a', { hasText: 'Keys' }).click();
      await mp.getByText('Nothing here yet.').waitFor();
      await mp.locator('nav.side a', { hasText: 'History' }).click();
      await mp.getByText('Nothing here yet.').waitFor();
      expect(await mp.locator(`tr[data-generation="${completionId}"]`).count()).toBe(0);
      await mp.getByRole('button', { name: 'Sign out' }).click();
      await mp.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    } finally {
      await memberBrowser.close();
      fs.rmSync(other, { recursive: true, force: true });
    }
    await page.reload();
    const row = page.locator('tr[data-member="member@acme.test"]');
    await row.getByText('active').waitFor();
    // The owner changes the member's personal limit in its row.
    await row.locator('input[name="limit"]').fill('7.5');
    await row.getByRole('button', { name: 'Save' }).click();
    await row.locator('td.num', { hasText: '7.50' }).waitFor();
    // Saving the limit left the role as it was (the row's role field shows the member's role, not the first option).
    expect(await row.locator('select[name="role"]').inputValue()).toBe('member');
    expect((await s.t.db.user.findFirstOrThrow({ where: { email: 'member@acme.test' } })).role).toBe('member');
    await axe(page, 'members (two)');
  });

  it('exports the activity as CSV: a header and the model row, cells as written', async () => {
    await go(page, 'Activity', /^Activity$/);
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    const csv = fs.readFileSync((await file.path())!, 'utf8').split('\r\n');
    expect(csv[0]).toBe('date,model,provider_name,endpoint_id,usage,requests,prompt_tokens,completion_tokens,reasoning_tokens,cached_tokens');
    expect(csv.some((l) => l.includes(`,${STACK_MODELS.chat},`))).toBe(true);
    // The chart stacked by key: the key's name (as text) in the legend.
    await page.locator('select', { has: page.locator('option[value="member"]') }).selectOption('key');
    await page.locator('figure.chart figcaption', { hasText: 'By key' }).waitFor();
    await expect(page.locator('.legend').textContent()).resolves.toContain(EVIL_NAME);
    await noXss(page);
  });

  it('runs a batch: uploads a JSONL file, shows its progress to the end, downloads the output; the file is listed in Files', async () => {
    await go(page, 'Batches', /^Batches$/);
    const lines = [1, 2, 3].map((i) => JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: STACK_MODELS.chat, messages: [{ role: 'user', content: `line ${i}` }] } }));
    await page.locator('input[type="file"]').setInputFiles({ name: 'lines.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(lines.join('\n') + '\n') });
    await page.getByRole('button', { name: 'Upload and start' }).click();
    const row = page.locator('tr[data-batch]').first();
    await row.waitFor();
    // The page reads the batch again while it runs: the row reaches its end without a reload.
    await row.getByText('completed', { exact: true }).waitFor({ timeout: 45_000 });
    await expect(row.textContent()).resolves.toContain('3 ✓ · 0 ✗ / 3');
    await axe(page, 'batches (one batch)');
    const [file] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'Output' }).click()]);
    const out = fs.readFileSync((await file.path())!, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { custom_id: string });
    expect(out.map((l) => l.custom_id).sort()).toEqual(['line-1', 'line-2', 'line-3']);
    await go(page, 'Files', /^Files$/);
    await page.getByText('lines.jsonl').waitFor();
    await axe(page, 'files (with files)');
  }, 90_000);

  it('a reset link from the CLI sets a new password and signs in (the member)', async () => {
    const member = await s.t.db.user.findFirstOrThrow({ where: { email: 'member@acme.test' } });
    const { resetUrl } = await cli(['user', 'reset-password', '--user', member.id]);
    const other = await browser.browser()?.newContext();
    const rp = other ? await other.newPage() : await newPage();
    if (!other) await browser.clearCookies();
    await rp.goto(resetUrl);
    await rp.getByRole('heading', { level: 1, name: 'Set a new password' }).waitFor();
    await axe(rp, 'reset');
    await rp.getByLabel('New password').fill('a brand new passphrase');
    await rp.getByLabel('Repeat the password').fill('not the same passphrase');
    await rp.getByRole('button', { name: 'Save and sign in' }).click();
    await rp.getByText('The passwords differ.').waitFor();
    await rp.getByLabel('New password').fill('a brand new passphrase');
    await rp.getByLabel('Repeat the password').fill('a brand new passphrase');
    await rp.getByRole('button', { name: 'Save and sign in' }).click();
    await rp.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await rp.locator('.me').textContent()).toContain('member@acme.test');
    // The same link again: used.
    await rp.getByRole('button', { name: 'Sign out' }).click();
    await rp.goto(resetUrl);
    await rp.getByLabel('New password').fill('another passphrase!');
    await rp.getByLabel('Repeat the password').fill('another passphrase!');
    await rp.getByRole('button', { name: 'Save and sign in' }).click();
    await rp.getByText('This link was used, has expired or is unknown').waitFor();
    await rp.close();
    await other?.close();
    if (!other) {
      await page.goto(`${s.url}/console`);
      await page.getByLabel('E-mail').fill('owner@acme.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    }
  });

  it('revokes the key: the SDK is refused after', async () => {
    await go(page, 'Keys', /^Keys$/);
    await page.getByRole('button', { name: /^Revoke/ }).click();
    await page.locator('tr[data-key]').getByText('revoked').waitFor();
    const client = new OpenAI({ apiKey, baseURL: `${s.url}/v1`, maxRetries: 0 });
    await expect(client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 401 });
  });

  it('the batches and files pages load (and pass axe); switching to Russian keeps every page working', async () => {
    await go(page, 'Batches', /^Batches$/);
    await axe(page, 'batches');
    await go(page, 'Files', /^Files$/);
    await axe(page, 'files');
    await page.getByRole('button', { name: 'Русский' }).click();
    await page.getByRole('heading', { level: 1, name: 'Файлы' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('ru');
    await go(page, 'Обзор', /^Обзор$/);
    await axe(page, 'overview (ru)');
    await page.getByRole('button', { name: 'English' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  });

  it('at phone width the sections stay reachable and nothing overflows the page sideways', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [section, heading] of [['History', /^History$/], ['Keys', /^Keys$/], ['Activity', /^Activity$/], ['Members', /^Members$/], ['Overview', /^Overview$/]] as const) {
      await go(page, section, heading);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect({ section, overflow }).toEqual({ section, overflow: 0 });
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('signs out: the session is gone on the server, the old cookie is refused, and the sign-in page shows', async () => {
    const cookie = (await browser.cookies(s.url)).find((c) => c.name === 'sy_session');
    expect(cookie?.httpOnly).toBe(true);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    await axe(page, 'sign-in');
    const replay = await fetch(`${s.url}/v1/auth/session`, { headers: { Cookie: `sy_session=${cookie!.value}` } });
    expect(replay.status).toBe(401);
    // And back in with the password.
    await page.getByLabel('E-mail').fill('owner@acme.test');
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Wrong e-mail or password.').waitFor();
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  });

  (SHOTS ? it : it.skip)('writes a screenshot of each page in both languages to docs/console/', async () => {
    fs.mkdirSync(SHOTS!, { recursive: true });
    // A little more traffic for the pictures: a key of the owner's (made with the session, as the page does) calls two more models.
    const cookie = (await browser.cookies(s.url)).find((c) => c.name === 'sy_session')!.value;
    const session = (await (await fetch(`${s.url}/v1/auth/session`, { headers: { Cookie: `sy_session=${cookie}` } })).json()) as { csrfToken: string };
    const made = await fetch(`${s.url}/v1/keys`, {
      method: 'POST',
      headers: { Cookie: `sy_session=${cookie}`, 'X-CSRF-Token': session.csrfToken, 'Content-Type': 'application/json', Origin: s.url },
      body: JSON.stringify({ name: 'reports', limit: 50, limit_reset: 'monthly' }),
    });
    expect(made.status).toBe(201);
    s.fake.setKnobs({ promptTokens: 3000, completionTokens: 900, text: 'A short answer.' });
    const client = new OpenAI({ apiKey: ((await made.json()) as { key: string }).key, baseURL: `${s.url}/v1`, maxRetries: 0 });
    for (const model of [STACK_MODELS.chatAnthropic, STACK_MODELS.chatGemini, STACK_MODELS.chat]) {
      await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    }
    const pages: [string, string][] = [
      ['overview', ''],
      ['activity', '/activity'],
      ['history', '/history'],
      ['generation', `/history/${completionId}`],
      ['keys', '/keys'],
      ['members', '/members'],
      ['batches', '/batches'],
      ['files', '/files'],
      ['playground', '/playground'],
    ];
    for (const lang of ['en', 'ru']) {
      await page.evaluate((l) => localStorage.setItem('sy_lang', l), lang);
      for (const [name, sub] of pages) {
        await page.goto(`${s.url}/console${sub}`);
        await page.locator('main h1').waitFor();
        await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });
        await page.screenshot({ path: path.join(SHOTS!, `${name}.${lang}.png`), fullPage: true });
      }
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${s.url}/console`);
      await page.locator('[data-tile="balance"]').waitFor();
      await page.screenshot({ path: path.join(SHOTS!, `overview.phone.${lang}.png`), fullPage: true });
      await page.setViewportSize({ width: 1280, height: 860 });
      await page.getByRole('button', { name: lang === 'en' ? 'Sign out' : 'Выйти' }).click();
      await page.locator('form input[type="email"]').waitFor();
      await page.screenshot({ path: path.join(SHOTS!, `sign-in.${lang}.png`) });
      await page.goto(`${s.url}/console/invite#token=example`);
      await page.locator('form input[type="password"]').first().waitFor();
      await page.screenshot({ path: path.join(SHOTS!, `invite.${lang}.png`) });
      await page.goto(`${s.url}/console`);
      await page.locator('form input[type="email"]').fill('owner@acme.test');
      await page.locator('form input[type="password"]').fill(PASSWORD);
      await page.locator('form button[type="submit"]').click();
      await page.locator('[data-tile="balance"]').waitFor();
    }
    await page.evaluate(() => localStorage.setItem('sy_lang', 'en'));
  }, 120_000);
});
