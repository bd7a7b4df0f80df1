import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../shared/cli/main';
import { hashApiKey, KEY_PATTERN } from '../../shared/auth/api-keys';
import { verifyToken } from '../../shared/auth/tokens';
import { verifyOperatorToken } from '../../shared/auth/operator-tokens';
import { Authenticator } from '../../api/middleware/auth';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { TEST_SECRET } from '../helpers/fixtures';
import { runProcess, type ProcessResult } from '../helpers/run-process';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../shared/runtime/embedded-postgres';
import { writeRuntimeInfo } from '../../shared/runtime/runtime-file';

let t: TestDb;
let home: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  t = await createTestDb();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-cli-'));
  env = { DATABASE_URL: t.url, SWITCHYARD_SECRET: TEST_SECRET, SWITCHYARD_HOME: home };
});
afterAll(async () => {
  await t.drop();
  fs.rmSync(home, { recursive: true, force: true });
});

async function cli(args: string, extraEnv: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const argv = args.match(/"[^"]*"|\S+/g)?.map((a) => a.replace(/^"(.*)"$/, '$1')) ?? [];
  const code = await runCli(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { ...env, ...extraEnv },
  });
  return { code, stdout, stderr };
}

/** Runs with --json and checks the contract: exit 0, exactly one JSON object on stdout, nothing on stderr. */
async function json(args: string, extraEnv: NodeJS.ProcessEnv = {}) {
  const r = await cli(`${args} --json`, extraEnv);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout.endsWith('\n')).toBe(true);
  expect(r.stdout.trim().split('\n')).toHaveLength(1);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** A readable success: exit 0, one line. */
async function line(args: string) {
  const r = await cli(args);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout.trim().split('\n')).toHaveLength(1);
  return r.stdout.trim();
}

async function failure(args: string, message: RegExp, extraEnv: NodeJS.ProcessEnv = {}) {
  const r = await cli(args, extraEnv);
  expect(r.code).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(message);
  return r.stderr;
}

const keys = (o: object) => Object.keys(o).sort();

describe('help and usage errors', () => {
  it('prints help with every command on --help, exit 0', async () => {
    for (const args of ['--help', '-h', 'org --help', 'key create --help']) {
      const r = await cli(args);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/Usage: switchyard/);
    }
    const r = await cli('--help');
    for (const c of ['org create', 'org topup', 'user create', 'token issue', 'key create', 'key revoke', 'operator token issue', 'catalog check']) expect(r.stdout).toContain(c);
  });

  it('exits 1 with a clear message for unknown commands, flags, extra arguments and missing flags', async () => {
    expect((await cli('')).code).toBe(1);
    await failure('frobnicate', /unknown command "frobnicate"/);
    await failure('org delete --name x', /unknown command "org delete"/);
    await failure('org', /"org" needs a subcommand/);
    await failure('org create --name Acme --colour blue', /unknown flag --colour/);
    await failure('org create --name Acme extra', /unexpected argument "extra"/);
    await failure('org create', /missing --name/);
    await failure('org topup --org x', /missing --amount/);
    await failure('user create --org x --email a@b.c', /missing --role/);
    await failure('key revoke', /missing --id/);
    await failure('token issue', /missing --user/);
    await failure('org create --name', /--name needs a value/);
  });
});

describe('org', () => {
  it('org create --json prints exactly the contract keys, and the owner token verifies', async () => {
    const out = await json('org create --name "Acme Corp" --balance 100.50');
    expect(keys(out)).toEqual(['callbackSecret', 'organizationId', 'ownerToken', 'ownerUserId', 'webhookSecret']);
    expect(out.organizationId).toMatch(/^org_/);
    expect(out.ownerUserId).toMatch(/^usr_/);
    expect(out.callbackSecret).toMatch(/^[0-9a-f]{64}$/);
    // whsec_ + base64 of a 32-byte key: what the standardwebhooks libraries take (test/api/callbacks.test.ts verifies with it).
    expect(out.webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const claims = verifyToken(out.ownerToken as string, TEST_SECRET);
    expect(claims).toMatchObject({ sub: out.ownerUserId, org: out.organizationId, role: 'owner' });
    const org = await t.db.organization.findUniqueOrThrow({ where: { id: out.organizationId as string } });
    expect(org.name).toBe('Acme Corp');
    expect(org.balance.toFixed(2)).toBe('100.50');
  });

  it('org create without --json prints one readable line', async () => {
    const text = await line('org create --name Plain');
    expect(text).toMatch(/^organization org_\w+ created; owner usr_\w+; owner token: eyJ\S+; callback secret: [0-9a-f]{64}; webhook secret: whsec_[A-Za-z0-9+/]{43}=$/);
  });

  it('org topup adds exactly and prints the balance as a decimal string', async () => {
    const { organizationId } = await json('org create --name Topup --balance 0.1');
    const out = await json(`org topup --org ${organizationId} --amount 0.2`);
    expect(out).toEqual({ organizationId, balance: '0.300000' });
    expect(await line(`org topup --org ${organizationId} --amount 1000000.000001`)).toBe(`organization ${organizationId} balance: 1000000.300001 RUB`);
  });

  it('org update --max-concurrency sets and clears the cap on its running jobs', async () => {
    const { organizationId } = await json('org create --name Capped');
    expect(await json(`org update --org ${organizationId} --max-concurrency 2`)).toEqual({ organizationId, maxConcurrency: 2 });
    expect(await line(`org update --org ${organizationId} --max-concurrency none`)).toBe(`organization ${organizationId} max concurrency: none`);
    await failure(`org update --org ${organizationId} --max-concurrency 0`, /--max-concurrency must be an integer of at least 1/);
    await failure('org update --org org_nope --max-concurrency 3', /not found/);
  });

  it('refuses bad amounts and unknown organizations', async () => {
    const { organizationId } = await json('org create --name Bad');
    await failure(`org topup --org ${organizationId} --amount abc`, /--amount must be a non-negative decimal/);
    await failure(`org topup --org ${organizationId} --amount 1e3`, /--amount must be a non-negative decimal/);
    await failure(`org topup --org ${organizationId} --amount=-5`, /--amount must be a non-negative decimal/);
    await failure(`org topup --org ${organizationId} --amount -5`, /--amount needs a value/);
    await failure(`org topup --org ${organizationId} --amount 0`, /--amount must be greater than 0/);
    await failure(`org topup --org ${organizationId} --amount 1.00000000001`, /more than 10 decimal places/);
    await failure('org create --name X --balance 12,5', /--balance must be a non-negative decimal/);
    await failure('org topup --org org_nope --amount 5', /Organization org_nope not found/);
  });
});

describe('user and token', () => {
  let organizationId: string;
  beforeAll(async () => {
    ({ organizationId } = (await json('org create --name Users')) as { organizationId: string });
  });

  it('user create --json prints {userId, token} and stores the limit', async () => {
    const out = await json(`user create --org ${organizationId} --email ann@example.com --role member --limit 50.5 --reset weekly`);
    expect(keys(out)).toEqual(['token', 'userId']);
    expect(verifyToken(out.token as string, TEST_SECRET)).toMatchObject({ sub: out.userId, org: organizationId, role: 'member' });
    const user = await t.db.user.findUniqueOrThrow({ where: { id: out.userId as string } });
    expect({ email: user.email, role: user.role, limit: user.limit?.toFixed(1), reset: user.limitReset }).toEqual({
      email: 'ann@example.com',
      role: 'member',
      limit: '50.5',
      reset: 'weekly',
    });
    expect(await line(`user create --org ${organizationId} --email bob@example.com --role admin`)).toMatch(/^user usr_\w+ \(bob@example.com, admin\) created; token: eyJ/);
  });

  it('refuses bad roles, periods, e-mails, duplicate e-mails and unknown organizations', async () => {
    await failure(`user create --org ${organizationId} --email c@example.com --role boss`, /--role must be one of owner, admin, member/);
    await failure(`user create --org ${organizationId} --email c@example.com --role member --limit 5 --reset hourly`, /--reset must be one of daily, weekly, monthly, never/);
    await failure(`user create --org ${organizationId} --email c@example.com --role member --reset daily`, /--reset needs --limit/);
    await failure(`user create --org ${organizationId} --email c@example.com --role member --limit -1`, /--limit needs a value/);
    await failure(`user create --org ${organizationId} --email nobody --role member`, /--email must be an e-mail address/);
    await failure(`user create --org org_nope --email c@example.com --role member`, /Organization org_nope not found/);
    await json(`user create --org ${organizationId} --email dup@example.com --role member`);
    await failure(`user create --org ${organizationId} --email dup@example.com --role member`, /already exists/);
  });

  it('token issue prints {token} for the user, with --ttl', async () => {
    const { userId } = (await json(`user create --org ${organizationId} --email tok@example.com --role admin`)) as { userId: string };
    // Each expiry is its ttl after the moment the token was issued, between the command's start and end.
    const now = () => Math.floor(Date.now() / 1000);
    const issued = async <T>(run: () => Promise<T>) => {
      const from = now();
      const out = await run();
      return { out, from, to: now() };
    };
    const short = await issued(() => json(`token issue --user ${userId} --ttl 120`));
    expect(keys(short.out)).toEqual(['token']);
    const claims = verifyToken(short.out.token as string, TEST_SECRET)!;
    expect(claims).toMatchObject({ sub: userId, org: organizationId, role: 'admin' });
    expect(claims.exp).toBeGreaterThanOrEqual(short.from + 120);
    expect(claims.exp).toBeLessThanOrEqual(short.to + 120);
    const long = await issued(() => line(`token issue --user ${userId}`));
    expect(long.out).toMatch(/^token: eyJ/);
    const exp = verifyToken(long.out.slice('token: '.length), TEST_SECRET)!.exp;
    expect(exp).toBeGreaterThanOrEqual(long.from + 30 * 24 * 3600);
    expect(exp).toBeLessThanOrEqual(long.to + 30 * 24 * 3600);
  });

  it('token issue refuses unknown users and bad ttls', async () => {
    await failure('token issue --user usr_nope', /User usr_nope not found/);
    await failure('token issue --user usr_nope --ttl 0', /--ttl must be an integer of at least 1/);
    await failure('token issue --user usr_nope --ttl 1.5', /--ttl must be an integer/);
  });
});

describe('key', () => {
  let organizationId: string;
  let ownerUserId: string;
  const auth = () => new Authenticator(t.db, TEST_SECRET, 0);
  beforeAll(async () => {
    ({ organizationId, ownerUserId } = (await json('org create --name Keys --balance 10')) as { organizationId: string; ownerUserId: string });
  });

  it('key create --json prints {id, key, label}; only the hash is stored; the key authenticates', async () => {
    const out = (await json(
      `key create --org ${organizationId} --user ${ownerUserId} --name ci --limit 25 --reset monthly --models openai/gpt-4.1-mini,openai/gpt-4.1 --rate-limit 30`,
    )) as { id: string; key: string; label: string };
    expect(keys(out)).toEqual(['id', 'key', 'label']);
    expect(out.key).toMatch(KEY_PATTERN);
    expect(out.label).toBe(`sy_...${out.key.slice(-6)}`);

    const row = await t.db.apiKey.findUniqueOrThrow({ where: { id: out.id } });
    expect(row.keyHash).toBe(hashApiKey(out.key));
    expect(JSON.stringify(row)).not.toContain(out.key);
    expect(JSON.stringify(row)).not.toContain(out.key.slice(3));
    expect(row).toMatchObject({ organizationId, userId: ownerUserId, name: 'ci', allowedModels: ['openai/gpt-4.1-mini', 'openai/gpt-4.1'], rateLimitPerMinute: 30, limitReset: 'monthly' });
    expect(row.limit?.toFixed(0)).toBe('25');

    const principal = await auth().authenticate(`Bearer ${out.key}`);
    expect(principal).toMatchObject({ kind: 'key', keyId: out.id, organizationId, userId: ownerUserId });
  });

  it('key create with defaults and readable output; --rate-limit 0 means none', async () => {
    const text = await line(`key create --org ${organizationId} --rate-limit 0`);
    const m = /^key (key_\w+) \((sy_\.\.\.\w{6})\) created: (sy_\w{40}) {2}\(shown once: store it now\)$/.exec(text);
    expect(m).not.toBeNull();
    const row = await t.db.apiKey.findUniqueOrThrow({ where: { id: m![1] } });
    expect(row).toMatchObject({ name: 'default', userId: null, allowedModels: [], rateLimitPerMinute: 0, limit: null });
    expect(row.keyHash).toBe(hashApiKey(m![3]));
  });

  it('key create refuses bad values and unknown organizations or users', async () => {
    await failure(`key create --org ${organizationId} --rate-limit -1`, /--rate-limit needs a value/);
    await failure(`key create --org ${organizationId} --rate-limit ten`, /--rate-limit must be an integer of at least 0/);
    await failure(`key create --org ${organizationId} --models ,`, /--models needs at least one model id/);
    await failure(`key create --org ${organizationId} --limit 5 --reset yearly`, /--reset must be one of/);
    await failure('key create --org org_nope', /Organization org_nope not found/);
    const other = (await json('org create --name Other')) as { ownerUserId: string };
    await failure(`key create --org ${organizationId} --user ${other.ownerUserId}`, /not found in this organization/);
  });

  it('key revoke prints {id, revoked: true}; the key then answers api_key_revoked', async () => {
    const k = (await json(`key create --org ${organizationId}`)) as { id: string; key: string };
    expect(await json(`key revoke --id ${k.id}`)).toEqual({ id: k.id, revoked: true });
    await expect(auth().authenticate(`Bearer ${k.key}`)).rejects.toMatchObject({ code: 'api_key_revoked' });
    expect(await line(`key revoke --id ${k.id}`)).toBe(`key ${k.id} revoked`); // idempotent
    await failure('key revoke --id key_nope', /Key key_nope not found/);
  });
});

describe('operator token', () => {
  it('operator token issue prints {token}: an operator token for the dashboard, no customer credential', async () => {
    const out = (await json('operator token issue --ttl 600')) as { token: string };
    expect(Object.keys(out)).toEqual(['token']);
    const claims = verifyOperatorToken(out.token, TEST_SECRET)!;
    expect(claims.typ).toBe('operator');
    expect(claims.exp - claims.iat).toBe(600);
    expect(verifyToken(out.token, TEST_SECRET)).toBeNull();
    await expect(new Authenticator(t.db, TEST_SECRET, 0).authenticate(`Bearer ${out.token}`)).rejects.toMatchObject({ status: 403 });
    expect(await line('operator token issue')).toMatch(/^operator token: eyJ/);
    await failure('operator token issue --ttl 0', /--ttl must be an integer of at least 1/);
    await failure('operator token', /unknown command "operator token"/);
  });
});

describe('environment', () => {
  it('generates the secret into SWITCHYARD_HOME when SWITCHYARD_SECRET is unset, and reuses it', async () => {
    const own = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-cli-secret-'));
    try {
      const noSecret = { SWITCHYARD_SECRET: '', SWITCHYARD_HOME: own };
      const a = await json('org create --name Secretive', noSecret);
      const secret = fs.readFileSync(path.join(own, 'secret'), 'utf8').trim();
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      expect(fs.statSync(path.join(own, 'secret')).mode & 0o777).toBe(0o600);
      expect(verifyToken(a.ownerToken as string, secret)).not.toBeNull();
      expect(verifyToken(a.ownerToken as string, TEST_SECRET)).toBeNull();
      const b = await json(`token issue --user ${a.ownerUserId}`, noSecret);
      expect(verifyToken(b.token as string, secret)).not.toBeNull();
    } finally {
      fs.rmSync(own, { recursive: true, force: true });
    }
  });

  it('reports an unreachable database in one line, exit 1', async () => {
    const stderr = await failure('org create --name X', /cannot use the database postgresql:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/nothing/, {
      DATABASE_URL: 'postgresql://postgres:pw@127.0.0.1:1/nothing',
    });
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).not.toContain(':pw@');
  });

  it('checks flag values before touching the database', async () => {
    await failure('org topup --org x --amount nope', /--amount must be/, { DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/nothing' });
  });
});

describe('catalog check', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-catalog-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const good = {
    providers: {
      acme: { kind: 'openai', baseUrl: 'https://api.example.com/v1', apiKeyEnv: 'ACME_API_KEY', region: 'eu', timeoutMs: 60000 },
      claude: { kind: 'anthropic', baseUrl: 'https://api.anthropic.example/v1' },
    },
    models: {
      'openai/gpt-4.1-mini': {
        displayName: 'GPT-4.1 mini',
        type: 'chat',
        endpoints: [{ provider: 'acme', upstreamModel: 'gpt-4.1-mini', price: { prompt: 40, completion: 160, request: 0 }, batch: { price: { prompt: 20, completion: '80' } }, supports: ['temperature', 'stream'] }],
      },
      'anthropic/claude': {
        displayName: 'Claude',
        type: 'chat',
        endpoints: [{ provider: 'claude', upstreamModel: 'claude-x', price: { prompt: '300', completion: '1500' } }],
      },
    },
  };
  const write = (name: string, content: unknown) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    return file;
  };
  /** No DATABASE_URL at all: catalog check needs no database. */
  const noDb = () => ({ DATABASE_URL: '', SWITCHYARD_HOME: path.join(dir, 'home') });

  it('accepts a good catalog: {ok, models, providers}', async () => {
    const file = write('good.json', good);
    expect(await json(`catalog check --file ${file}`, noDb())).toEqual({ ok: true, models: 2, providers: 2 });
    const r = await cli(`catalog check --file ${file}`, noDb());
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/is valid: 2 model\(s\), 2 provider\(s\)\n$/);
    expect(fs.existsSync(path.join(dir, 'home', 'pg'))).toBe(false);
    // the default file comes from SWITCHYARD_CATALOG
    expect(await json('catalog check', { ...noDb(), SWITCHYARD_CATALOG: file })).toEqual({ ok: true, models: 2, providers: 2 });
  });

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const bad = (mutate: (c: any) => void) => {
    const c = JSON.parse(JSON.stringify(good));
    mutate(c);
    return c;
  };

  it.each([
    ['missing provider', bad((c) => (c.models['openai/gpt-4.1-mini'].endpoints[0].provider = 'ghost')), /provider "ghost" is not defined/],
    ['unknown kind', bad((c) => (c.providers.acme.kind = 'telepathy')), /unknown kind "telepathy"/],
    ['negative price', bad((c) => (c.models['anthropic/claude'].endpoints[0].price.prompt = '-1')), /negative price prompt = -1/],
    // Batch prices (docs/batches.md "Provider batch APIs"): only where the provider has a batch API for the model's type.
    ['negative batch price', bad((c) => (c.models['openai/gpt-4.1-mini'].endpoints[0].batch.price.prompt = '-1')), /endpoint 0: negative batch price prompt = -1/],
    ['batch price above the regular one', bad((c) => (c.models['openai/gpt-4.1-mini'].endpoints[0].batch.price.completion = '161')), /batch price completion = 161 is above the regular price 160/],
    ['batch price with no regular price', bad((c) => (c.models['openai/gpt-4.1-mini'].endpoints[0].batch.price.image = '1')), /batch price image has no regular price image/],
    [
      'batch prices on a kind without a batch API',
      bad((c) => {
        c.providers.acme.kind = 'gemini';
      }),
      /batch prices on provider "acme" of kind "gemini", which has no batch API/,
    ],
    [
      'batch prices on a model type the batch API does not take',
      bad((c) => {
        c.models['openai/gpt-4.1-mini'].type = 'image';
      }),
      /batch prices on a image model, which the openai batch API does not take \(it takes chat, embedding\)/,
    ],
    ['batch without a price', bad((c) => (c.models['openai/gpt-4.1-mini'].endpoints[0].batch = {})), /batch must have required property 'price'/],
    // Tier prices (service_tier priority, flex): only where the provider kind sells them, in exactly the names of `price`.
    [
      'tiers on a kind that sells none',
      bad((c) => (c.models['anthropic/claude'].endpoints[0].tiers = { priority: { price: { prompt: '600', completion: '3000' } } })),
      /endpoint 0: tiers on provider "claude" of kind "anthropic", which sells no processing tiers/,
    ],
    ['tier price with no regular price', bad((c) => (c.models['openai/gpt-4.1-mini'].endpoints[0].tiers = { priority: { price: { prompt: 70, completion: 280, request: 0, image: 1 } } })), /priority price image has no regular price image/],
    ['tier lacking a regular price', bad((c) => (c.models['openai/gpt-4.1-mini'].endpoints[0].tiers = { flex: { price: { prompt: 20, completion: 80 } } })), /flex prices lack request, which the regular price names/],
  ])('refuses a catalog with a %s, exit 1', async (_name, catalog, problem) => {
    const file = write(`${String(_name).replace(/ /g, '-')}.json`, catalog);
    const stderr = await failure(`catalog check --file ${file} --json`, problem, noDb());
    expect(stderr.split('\n')[0]).toMatch(/^error: catalog .* refused with 1 problem\(s\):$/);
  });

  it('refuses a duplicate id', async () => {
    const text = JSON.stringify(good, null, 2).replace(
      '"anthropic/claude": {',
      '"openai/gpt-4.1-mini": { "displayName": "again", "type": "chat", "endpoints": [{ "provider": "acme", "upstreamModel": "x", "price": {} }] },\n    "anthropic/claude": {',
    );
    const file = write('duplicate.json', text);
    await failure(`catalog check --file ${file}`, /duplicate id "openai\/gpt-4.1-mini"/, noDb());
  });

  it('names every problem on its own stderr line', async () => {
    const file = write(
      'many.json',
      bad((c) => {
        c.providers.acme.kind = 'telepathy';
        c.models['openai/gpt-4.1-mini'].endpoints[0].provider = 'ghost';
        c.models['anthropic/claude'].endpoints[0].price.completion = -2;
      }),
    );
    const stderr = await failure(`catalog check --file ${file}`, /3 problem\(s\)/, noDb());
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(/^- provider "acme": unknown kind "telepathy"/);
    expect(lines.slice(1).join('\n')).toMatch(/provider "ghost" is not defined/);
    expect(lines.slice(1).join('\n')).toMatch(/negative price completion = -2/);
  });

  it('names what the schema refuses together with every other problem', async () => {
    const file = write(
      'schema-and-more.json',
      bad((c) => {
        c.providers.acme.kind = 'telepathy';
        c.models['anthropic/claude'].endpoints[0].maxDimension = 5; // misspelled
        c.models['openai/gpt-4.1-mini'].endpoints[0].price.prompt = '-1';
      }),
    );
    const stderr = await failure(`catalog check --file ${file}`, /3 problem\(s\)/, noDb());
    expect(stderr).toMatch(/must NOT have additional properties/);
    expect(stderr).toMatch(/unknown kind "telepathy"/);
    expect(stderr).toMatch(/negative price prompt = -1/);
  });

  it('finds a duplicate id after a brace inside a string', async () => {
    const braced = bad((c) => (c.models['openai/gpt-4.1-mini'].displayName = 'GPT mini (v2}'));
    const text = JSON.stringify(braced, null, 2).replace(
      '"anthropic/claude": {',
      '"openai/gpt-4.1-mini": { "displayName": "again", "type": "chat", "endpoints": [{ "provider": "acme", "upstreamModel": "x", "price": {} }] },\n    "anthropic/claude": {',
    );
    const file = write('duplicate-after-brace.json', text);
    await failure(`catalog check --file ${file}`, /duplicate id "openai\/gpt-4.1-mini"/, noDb());
  });

  it('refuses a missing or malformed file', async () => {
    await failure(`catalog check --file ${path.join(dir, 'absent.json')}`, /cannot read/, noDb());
    await failure(`catalog check --file ${write('broken.json', '{ "providers": ')}`, /is not valid JSON/, noDb());
  });
});

describe('database discovery without DATABASE_URL', () => {
  jest.setTimeout(60_000);
  let own: string;
  beforeAll(() => {
    own = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-cli-home-'));
    fs.chmodSync(own, 0o755); // as root, the embedded PostgreSQL runs as the postgres user and must reach it
  });
  afterAll(() => fs.rmSync(own, { recursive: true, force: true }));

  it('uses the external database a running service recorded in runtime.json', async () => {
    const home = path.join(own, 'svc');
    writeRuntimeInfo(home, { pid: process.pid, startedAt: new Date().toISOString(), databaseUrl: t.url, redisUrl: 'redis://x', embedded: { postgres: false, redis: false } });
    const out = await json('org create --name ViaRuntime', { DATABASE_URL: '', SWITCHYARD_HOME: home });
    expect(await t.db.organization.findUnique({ where: { id: out.organizationId as string } })).not.toBeNull();
  });

  it('starts the embedded PostgreSQL itself and stops it afterwards; reuses a running one and leaves it running', async () => {
    const home = path.join(own, 'embedded');
    const e = { DATABASE_URL: '', SWITCHYARD_HOME: home };
    const created = await json('org create --name Embedded --balance 5', e);
    const pidFile = path.join(home, 'pg', 'data', 'postmaster.pid');
    expect(fs.existsSync(path.join(home, 'pg', 'data', 'PG_VERSION'))).toBe(true);
    expect(fs.existsSync(pidFile)).toBe(false); // stopped again

    const service = await startEmbeddedPostgres({ dataDir: path.join(home, 'pg') });
    try {
      const out = await json(`org topup --org ${created.organizationId} --amount 1`, e);
      expect(out.balance).toBe('6.000000'); // same data as the first run
      expect(fs.existsSync(pidFile)).toBe(true); // the service's server still runs
      const c = new Client({ connectionString: service.url });
      await c.connect();
      expect((await c.query('SELECT 1 AS one')).rows[0].one).toBe(1);
      await c.end();
    } finally {
      await service.stop();
    }
  });
});

describe('the switchyard bin right after npm install (no build)', () => {
  const root = path.join(__dirname, '..', '..');
  const bin = path.join(root, 'bin', 'switchyard.js');

  function runBin(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<ProcessResult> {
    return runProcess(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ...env, ...extraEnv } });
  }

  it('runs `org create` from the TypeScript sources, whether or not dist/ exists', async () => {
    // The bin prefers the sources: a checkout without dist/ (nothing built yet) runs the same path as this one.
    const r = await runBin(['org', 'create', '--name', 'FromSources', '--balance', '3', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, string>;
    expect(keys(out)).toEqual(['callbackSecret', 'organizationId', 'ownerToken', 'ownerUserId', 'webhookSecret']);
    const org = await t.db.organization.findUniqueOrThrow({ where: { id: out.organizationId } });
    expect(org.name).toBe('FromSources');
  }, 60_000);

  it('exits 1 with the CLI message on a usage error', async () => {
    const r = await runBin(['org', 'create']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/--name/);
    expect(r.stderr).not.toMatch(/npm run build/);
  }, 60_000);
});
