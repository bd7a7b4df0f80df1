/**
 * A key changed through one API process reaches the others at once (shared/runtime/key-changes.ts), not when their key
 * cache ages out or their lease is next renewed. Two API processes on one database and one Redis prefix: `b`, the stack
 * (the API with its workers, so it takes reservation leases), and `a`, another API process where the owner changes the
 * key. Both keep keys cached for a minute here, so only the change's message can make `b` see it within the test.
 */
import request from 'supertest';
import { createApp } from '../../api/app';
import { runCli } from '../../shared/cli/main';
import { createLogger } from '../../shared/logger';
import { createRedis } from '../../shared/queue/redis';
import { TEST_SECRET } from '../helpers/fixtures';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { createTestStack, STACK_MODELS, type TestStack } from '../helpers/test-stack';
import { waitFor, waitUntil } from '../helpers/until';

const CACHE_MS = 60_000;

let b: TestStack;
let a: ReturnType<typeof createApp>;
const connections: Array<ReturnType<typeof createRedis>> = [];

beforeAll(async () => {
  b = await createTestStack({ appDeps: { authCacheMs: CACHE_MS } });
  const redis = createRedis(TEST_REDIS_URL, { name: 'test-api-a' });
  const subscriber = createRedis(TEST_REDIS_URL, { name: 'test-api-a-sub', patient: true });
  connections.push(redis, subscriber);
  a = createApp({
    config: b.ctx.config,
    db: b.t.db,
    pool: b.t.pool,
    redis,
    subscriber,
    catalog: b.catalog,
    logger: createLogger({ silent: !process.env.TEST_LOGS }),
    secret: TEST_SECRET,
    authCacheMs: CACHE_MS,
  });
  await a.locals.ctx.ready();
});
afterAll(async () => {
  await a.locals.ctx.close();
  for (const c of connections) c.disconnect();
  await b.close();
});

const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });
const chat = (auth: Record<string, string>) => request(b.app).post('/v1/chat/completions').set(auth).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });

it('a key revoked, disabled or enabled on one process is refused or served by the other at once, its cache notwithstanding', async () => {
  const org = await b.seed();
  // Cached on both.
  expect((await request(b.app).get('/v1/key').set(org.auth)).status).toBe(200);
  expect((await request(a).get('/v1/key').set(org.auth)).status).toBe(200);

  const status = async () => (await request(b.app).get('/v1/key').set(org.auth)).status;
  expect((await request(a).patch(`/v1/keys/${org.key.id}`).set(bearer(org.ownerToken)).send({ disabled: true })).status).toBe(200);
  await waitUntil(async () => ((await status()) === 401 ? true : undefined), 2_000);
  expect((await request(a).patch(`/v1/keys/${org.key.id}`).set(bearer(org.ownerToken)).send({ disabled: false })).status).toBe(200);
  await waitUntil(async () => ((await status()) === 200 ? true : undefined), 2_000);
  expect((await request(a).delete(`/v1/keys/${org.key.id}`).set(bearer(org.ownerToken))).status).toBe(200);
  await waitUntil(async () => ((await status()) === 401 ? true : undefined), 2_000);
  // The process that made the change refused it before it answered.
  expect((await request(a).get('/v1/key').set(org.auth)).status).toBe(401);
});

it('a key whose limit is lowered on one process is not served from the lease the other took under the old limit', async () => {
  const org = await b.seed({ keyLimit: '100' });
  // Requests through `b` until it holds a lease for the key (leases are on, as in npm start; the leases-off leg skips).
  if (b.ctx.config.leases.requests === 0) return;
  const leased = () => b.t.db.$queryRawUnsafe<Array<{ n: number }>>(`SELECT COUNT(*)::int AS n FROM reservations WHERE expires_at IS NOT NULL AND status = 'held' AND api_key_id = $1`, org.key.id);
  await waitUntil(async () => {
    expect((await chat(org.auth)).status).toBe(200);
    return (await leased())[0]!.n > 0 ? true : undefined;
  }, 10_000);

  const spent = async () => Number((await b.t.db.apiKey.findUniqueOrThrow({ where: { id: org.key.id } })).periodSpent);
  await b.settled(org.organizationId);
  const before = await spent();
  // Below what is spent: nothing more may be granted under this key.
  const applied = jest.spyOn(b.ctx.auth, 'forget');
  const res = await request(a).patch(`/v1/keys/${org.key.id}`).set(bearer(org.ownerToken)).send({ limit: before / 2 });
  expect(res.status).toBe(200);
  // The message has reached the other process (it forgets the key and revokes its leases at once); the lease would be
  // renewed (and found revoked) only about a second later.
  await waitFor('the change applied by the other process', () => applied.mock.calls.some(([id]) => id === org.key.id));
  applied.mockRestore();
  const after = await chat(org.auth);
  expect(after.status).toBe(402);
  expect(after.body.error.metadata.reason).toBe('key_limit_exceeded');
  await b.settled(org.organizationId);
  expect(await spent()).toBe(before);
});

/** `switchyard key revoke` run beside the deployment, with `env` over its database and secret; its exit code and stderr. */
async function cliRevoke(id: string, env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const code = await runCli(['key', 'revoke', '--id', id, '--json'], {
    stdout: { write: () => true },
    stderr: { write: (t: string) => ((stderr += t), true) },
    env: { DATABASE_URL: b.t.url, SWITCHYARD_SECRET: TEST_SECRET, SWITCHYARD_HOME: b.ctx.config.homeDir, ...env },
  });
  return { code, stderr };
}

it('a key revoked with the CLI is refused by the running processes at once: the CLI tells them over REDIS_URL', async () => {
  const org = await b.seed();
  expect((await request(b.app).get('/v1/key').set(org.auth)).status).toBe(200);
  const { code, stderr } = await cliRevoke(org.key.id, { REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: b.ctx.config.queuePrefix });
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  // Cached for a minute here: only the CLI's message can make `b` refuse it now.
  const refused = await waitUntil(async () => {
    const res = await request(b.app).get('/v1/key').set(org.auth);
    return res.status === 401 ? res.body.error.code : undefined;
  }, 2_000);
  expect(refused).toBe('api_key_revoked');
});

it('a CLI that cannot reach Redis still revokes the key, and says the processes were not told', async () => {
  const org = await b.seed();
  const { code, stderr } = await cliRevoke(org.key.id, { REDIS_URL: 'redis://127.0.0.1:1', QUEUE_PREFIX: b.ctx.config.queuePrefix });
  expect(code).toBe(0);
  expect(stderr).toMatch(/not told of the change .*redis:\/\/127\.0\.0\.1:1.*within a second/);
  expect((await b.t.db.apiKey.findUniqueOrThrow({ where: { id: org.key.id } })).revokedAt).not.toBeNull();
});
