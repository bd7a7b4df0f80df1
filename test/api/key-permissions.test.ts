import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedOrg } from '../helpers/fixtures';
import { runCli } from '../../shared/cli/main';
import { TEST_SECRET } from '../helpers/fixtures';

/** Issue 10.2: revocation is final, and who may change which field of a key (docs/key-permissions.md). */
let h: TestApp;
let org: Awaited<ReturnType<typeof seedOrg>>;
let admin: { userId: string; token: string };
let member: { userId: string; token: string };

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0 } });
  org = await seedOrg(h.t.db);
  admin = await org.accounts.createUser({ organizationId: org.organizationId, email: 'admin@example.com', role: 'admin' });
  member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'member@example.com', role: 'member' });
});
afterAll(() => h.close());

const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });
const patch = (id: string, token: string, body: object) => request(h.app).patch(`/v1/keys/${id}`).set(bearer(token)).send(body);

/** A key of the member, created by the admin with every restriction set. */
async function restrictedKey() {
  const res = await request(h.app)
    .post('/v1/keys')
    .set(bearer(admin.token))
    .send({ user_id: member.userId, name: 'given', limit: 5, limit_reset: 'monthly', allowed_models: ['a/one', 'a/two'], rate_limit_per_minute: 10 });
  expect(res.status).toBe(201);
  expect(res.body.locked_fields.sort()).toEqual(['allowed_models', 'limit', 'rate_limit_per_minute']);
  return res.body as { id: string; key: string };
}

describe('revocation is final', () => {
  it('after DELETE /v1/keys/{id}, PATCH {"disabled": false} by the member (or the owner) does not revive the key', async () => {
    const k = await restrictedKey();
    expect((await request(h.app).delete(`/v1/keys/${k.id}`).set(bearer(admin.token))).status).toBe(200);
    for (const token of [member.token, admin.token, org.ownerToken]) {
      const res = await patch(k.id, token, { disabled: false });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
      expect((await patch(k.id, token, { name: 'x', limit: null })).status).toBe(409);
    }
    const probe = await request(h.app).get('/v1/key').set(bearer(k.key));
    expect(probe.status).toBe(401);
    expect(probe.body.error.code).toBe('api_key_revoked');
    const listed = (await request(h.app).get('/v1/keys').set(bearer(member.token))).body.data.find((x: { id: string }) => x.id === k.id);
    expect(listed).toMatchObject({ revoked: true, disabled: false, limit: 5, allowed_models: ['a/one', 'a/two'], rate_limit_per_minute: 10 });
  });

  it('after `switchyard key revoke`, PATCH {"disabled": false} does not revive the key', async () => {
    const k = await restrictedKey();
    const out: string[] = [];
    const code = await runCli(['key', 'revoke', '--id', k.id, '--json'], {
      stdout: { write: (s: string) => out.push(s) },
      stderr: { write: (s: string) => out.push(s) },
      env: { DATABASE_URL: h.t.url, SWITCHYARD_SECRET: TEST_SECRET },
    });
    expect(code).toBe(0);
    expect((await patch(k.id, member.token, { disabled: false })).status).toBe(409);
    expect((await request(h.app).get('/v1/key').set(bearer(k.key))).body.error.code).toBe('api_key_revoked');
  });

  it('disabling is a separate, reversible state', async () => {
    const own = await request(h.app).post('/v1/keys').set(bearer(member.token)).send({ name: 'own' });
    const id = own.body.id;
    const off = await patch(id, member.token, { disabled: true });
    expect(off.body).toMatchObject({ disabled: true, revoked: false, revoked_at: null });
    const probe = await request(h.app).get('/v1/key').set(bearer(own.body.key));
    expect(probe.status).toBe(401);
    expect(probe.body.error.code).toBe('UNAUTHORIZED');
    expect(probe.body.error.message).toMatch(/disabled/);
    expect((await patch(id, member.token, { disabled: false })).body).toMatchObject({ disabled: false });
    expect((await request(h.app).get('/v1/key').set(bearer(own.body.key))).status).toBe(200);
  });
});

describe('the key-field permission table, field by field', () => {
  it('name: the member renames its own key, even one an admin restricted', async () => {
    const k = await restrictedKey();
    expect((await patch(k.id, member.token, { name: 'mine now' })).body.name).toBe('mine now');
  });

  it('disabled: an admin-disabled key stays disabled for its member; the member may disable it', async () => {
    const k = await restrictedKey();
    expect((await patch(k.id, member.token, { disabled: true })).status).toBe(200);
    expect((await patch(k.id, member.token, { disabled: false })).status).toBe(200);
    expect((await patch(k.id, admin.token, { disabled: true })).body.locked_fields).toContain('disabled');
    const res = await patch(k.id, member.token, { disabled: false });
    expect(res.status).toBe(403);
    expect(res.body.error.details.errors[0].path).toBe('/disabled');
    expect((await request(h.app).get('/v1/key').set(bearer(k.key))).status).toBe(401);
    expect((await patch(k.id, org.ownerToken, { disabled: false })).body.disabled).toBe(false);
    expect((await request(h.app).get('/v1/key').set(bearer(k.key))).status).toBe(200);
  });

  it('limit and limit_reset: the member may lower the limit, never raise, remove it or change its period', async () => {
    const k = await restrictedKey();
    for (const body of [{ limit: 6 }, { limit: null }, { limit: '5.0000000001' }, { limit_reset: 'daily' }, { limit: 4, limit_reset: 'daily' }]) {
      const res = await patch(k.id, member.token, body);
      expect([res.status, body]).toEqual([403, body]);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    expect((await patch(k.id, member.token, { limit: 4 })).body).toMatchObject({ limit: 4, limit_reset: 'monthly' });
    expect((await patch(k.id, member.token, { limit: 4.5 })).status).toBe(403); // above what it is now
    expect((await patch(k.id, admin.token, { limit: 50, limit_reset: 'daily' })).body).toMatchObject({ limit: 50, limit_reset: 'daily' });
  });

  it('allowed_models: the member may narrow the list, never widen it or empty it (all models)', async () => {
    const k = await restrictedKey();
    for (const body of [{ allowed_models: [] }, { allowed_models: ['a/one', 'a/three'] }, { allowed_models: ['a/three'] }]) {
      expect((await patch(k.id, member.token, body)).status).toBe(403);
    }
    expect((await patch(k.id, member.token, { allowed_models: ['a/two'] })).body.allowed_models).toEqual(['a/two']);
    expect((await patch(k.id, member.token, { allowed_models: ['a/one', 'a/two'] })).status).toBe(403);
    expect((await patch(k.id, admin.token, { allowed_models: [] })).body.allowed_models).toEqual([]);
  });

  it('rate_limit_per_minute: the member may lower it, never raise, clear (organization default) or set 0 (none)', async () => {
    const k = await restrictedKey();
    for (const body of [{ rate_limit_per_minute: 11 }, { rate_limit_per_minute: null }, { rate_limit_per_minute: 0 }]) {
      expect((await patch(k.id, member.token, body)).status).toBe(403);
    }
    expect((await patch(k.id, member.token, { rate_limit_per_minute: 3 })).body.rate_limit_per_minute).toBe(3);
    expect((await patch(k.id, admin.token, { rate_limit_per_minute: 0 })).body.rate_limit_per_minute).toBe(0);
  });

  it("a member's own restrictions (set by itself) are its own to loosen", async () => {
    const own = await request(h.app).post('/v1/keys').set(bearer(member.token)).send({ limit: 1, allowed_models: ['a/one'], rate_limit_per_minute: 1 });
    expect(own.body.locked_fields).toEqual([]);
    const res = await patch(own.body.id, member.token, { limit: null, allowed_models: [], rate_limit_per_minute: null });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ limit: null, allowed_models: [], rate_limit_per_minute: null });
    // Once an admin sets one, that one is locked.
    await patch(own.body.id, admin.token, { limit: 2 });
    expect((await patch(own.body.id, member.token, { limit: 3 })).status).toBe(403);
    expect((await patch(own.body.id, member.token, { allowed_models: [] })).status).toBe(200);
  });

  it('a member changes no key of another user; owner and admin change every field', async () => {
    const k = await restrictedKey();
    const other = await org.accounts.createUser({ organizationId: org.organizationId, email: 'm2@example.com', role: 'member' });
    expect((await patch(k.id, other.token, { name: 'x' })).status).toBe(403);
    const res = await patch(k.id, org.ownerToken, { name: 'n', limit: null, allowed_models: [], rate_limit_per_minute: null, disabled: true });
    expect(res.body).toMatchObject({ name: 'n', limit: null, allowed_models: [], rate_limit_per_minute: null, disabled: true });
  });
});

describe('with the authentication cache on (1 s)', () => {
  it('disabling, enabling and revoking take effect at once in this process', async () => {
    const cached = await createTestApp({ deps: { authCacheMs: 1000 } });
    try {
      const o = await seedOrg(cached.t.db);
      const k = (await request(cached.app).post('/v1/keys').set(bearer(o.ownerToken)).send({})).body;
      const probe = () => request(cached.app).get('/v1/key').set(bearer(k.key));
      expect((await probe()).status).toBe(200);
      await request(cached.app).patch(`/v1/keys/${k.id}`).set(bearer(o.ownerToken)).send({ disabled: true });
      expect((await probe()).status).toBe(401);
      await request(cached.app).patch(`/v1/keys/${k.id}`).set(bearer(o.ownerToken)).send({ disabled: false });
      expect((await probe()).status).toBe(200);
      await request(cached.app).delete(`/v1/keys/${k.id}`).set(bearer(o.ownerToken));
      expect((await probe()).body.error.code).toBe('api_key_revoked');
    } finally {
      await cached.close();
    }
  });
});

describe('a limit and its period go together (interface.md: limit_reset is null when no limit is set)', () => {
  it('PATCH limit_reset null on a key with a limit makes the period never, not null; a period without a limit is a 400', async () => {
    const created = await request(h.app).post('/v1/keys').set(bearer(org.ownerToken)).send({ name: 'limited', limit: 5, limit_reset: 'daily' });
    expect(created.status).toBe(201);
    expect((await patch(created.body.id, org.ownerToken, { limit_reset: null })).status).toBe(200);
    expect((await request(h.app).get('/v1/key').set(bearer(created.body.key))).body).toMatchObject({ limit: 5, limit_reset: 'never' });

    const unlimited = await request(h.app).post('/v1/keys').set(bearer(org.ownerToken)).send({ name: 'unlimited' });
    const refused = await patch(unlimited.body.id, org.ownerToken, { limit_reset: 'weekly' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/needs a limit/);
    expect((await patch(unlimited.body.id, org.ownerToken, { limit_reset: null })).status).toBe(200);
    expect((await request(h.app).get('/v1/key').set(bearer(unlimited.body.key))).body).toMatchObject({ limit: null, limit_reset: null });
  });
});
