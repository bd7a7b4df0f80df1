import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedOrg } from '../helpers/fixtures';

/**
 * Members over HTTP (decisions.md section 8) and the attacks on them: an owner demoted by an admin, a member seeing
 * only itself, another organization's members by id, a removed member's cookie, token and keys.
 */
let h: TestApp;
const PASSWORD = 'a long enough password';

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0 } });
});
afterAll(() => h.close());

interface Person {
  id: string;
  cookie: string;
  csrf: string;
}

function cookieOf(res: request.Response): string {
  const value = /^sy_session=([^;]*)/.exec(([] as string[]).concat(res.headers['set-cookie'] ?? [])[0] ?? '')?.[1];
  if (!value) throw new Error('no session cookie');
  return value;
}
async function accept(inviteToken: string): Promise<Person> {
  const res = await request(h.app).post('/v1/auth/invite').send({ token: inviteToken, password: PASSWORD });
  expect(res.status).toBe(200);
  return { id: res.body.user.id, cookie: cookieOf(res), csrf: res.body.csrfToken };
}
/** An organization whose owner signed in (its invite accepted). */
async function organization(tag: string) {
  const org = await seedOrg(h.t.db);
  const { inviteToken, userId } = await org.accounts.inviteUser({ organizationId: org.organizationId, email: `owner-${tag}@example.com`, role: 'owner' });
  // The placeholder owner seedOrg made is removed, so the invited one is the only owner.
  await h.t.db.user.update({ where: { id: org.ownerUserId }, data: { removedAt: new Date() } });
  const owner = await accept(inviteToken);
  expect(owner.id).toBe(userId);
  return { org, owner };
}
const as = (p: Person) => ({
  get: (path: string) => request(h.app).get(path).set('Cookie', `sy_session=${p.cookie}`),
  post: (path: string, body: object) => request(h.app).post(path).set('Cookie', `sy_session=${p.cookie}`).set('X-CSRF-Token', p.csrf).send(body),
  patch: (path: string, body: object) => request(h.app).patch(path).set('Cookie', `sy_session=${p.cookie}`).set('X-CSRF-Token', p.csrf).send(body),
  delete: (path: string) => request(h.app).delete(path).set('Cookie', `sy_session=${p.cookie}`).set('X-CSRF-Token', p.csrf),
});
async function invited(by: Person, email: string, role: string, extra: object = {}): Promise<Person> {
  const res = await as(by).post('/v1/members', { email, role, ...extra });
  expect(res.status).toBe(201);
  return accept(res.body.inviteToken);
}

describe('members', () => {
  it('an owner invites; the invite answers the member, its token and link; accepting it makes the member active', async () => {
    const { owner } = await organization('invite');
    const res = await as(owner).post('/v1/members', { email: 'New@Invite.test', role: 'member', limit: 5, limit_reset: 'daily' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^usr_/),
      email: 'new@invite.test',
      role: 'member',
      status: 'invited',
      limit: 5,
      limitReset: 'daily',
      limitRemaining: 5,
      createdAt: expect.any(String),
      inviteToken: expect.stringMatching(/^syi_/),
      inviteUrl: `http://localhost:${h.config.port}/console/invite#token=${res.body.inviteToken}`,
    });
    await accept(res.body.inviteToken);
    const list = await as(owner).get('/v1/members');
    expect(list.body.data.map((m: { email: string; status: string }) => [m.email, m.status])).toEqual([
      ['owner-invite@example.com', 'active'],
      ['new@invite.test', 'active'],
    ]);
    expect((await as(owner).post('/v1/members', { email: 'new@invite.test', role: 'member' })).status).toBe(409);
  });

  it('a member sees only itself, and may invite, change or remove nobody', async () => {
    const { owner } = await organization('self');
    const admin = await invited(owner, 'admin@self.test', 'admin');
    const member = await invited(owner, 'member@self.test', 'member');
    const list = await as(member).get('/v1/members');
    expect(list.status).toBe(200);
    expect(list.body.data.map((m: { id: string }) => m.id)).toEqual([member.id]);
    expect((await as(member).post('/v1/members', { email: 'x@self.test', role: 'member' })).status).toBe(403);
    expect((await as(member).patch(`/v1/members/${member.id}`, { limit: 1000 })).status).toBe(403);
    expect((await as(member).delete(`/v1/members/${admin.id}`)).status).toBe(403);
    expect((await as(admin).get('/v1/members')).body.data).toHaveLength(3);
  });

  it('an admin never touches an owner: no demotion, no removal, no limit, no owner made', async () => {
    const { owner } = await organization('admin');
    const admin = await invited(owner, 'admin@admin.test', 'admin');
    const member = await invited(owner, 'member@admin.test', 'member');
    const demote = await as(admin).patch(`/v1/members/${owner.id}`, { role: 'member' });
    expect(demote.status).toBe(403);
    expect(demote.body.error.code).toBe('FORBIDDEN');
    expect((await as(admin).patch(`/v1/members/${owner.id}`, { limit: 1 })).status).toBe(403);
    expect((await as(admin).delete(`/v1/members/${owner.id}`)).status).toBe(403);
    expect((await as(admin).patch(`/v1/members/${member.id}`, { role: 'owner' })).status).toBe(403);
    expect((await as(admin).post('/v1/members', { email: 'o2@admin.test', role: 'owner' })).status).toBe(403);
    expect((await as(owner).get('/v1/auth/session')).body.user.role).toBe('owner');
    // What an admin may do: another admin, a member's role and limit.
    expect((await as(admin).post('/v1/members', { email: 'a2@admin.test', role: 'admin' })).status).toBe(201);
    const changed = await as(admin).patch(`/v1/members/${member.id}`, { role: 'admin', limit: '2.5', limit_reset: 'monthly' });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ role: 'admin', limit: 2.5, limitReset: 'monthly', limitRemaining: 2.5 });
    // Seen on the member's next request.
    expect((await as(member).get('/v1/auth/session')).body.user.role).toBe('admin');
  });

  it('nobody changes their own role; the last owner can be neither demoted nor removed (409)', async () => {
    const { owner } = await organization('last');
    const admin = await invited(owner, 'admin@last.test', 'admin');
    expect((await as(owner).patch(`/v1/members/${owner.id}`, { role: 'admin' })).status).toBe(403);
    expect((await as(admin).patch(`/v1/members/${admin.id}`, { role: 'member' })).status).toBe(403);
    const self = await as(owner).delete(`/v1/members/${owner.id}`);
    expect(self.status).toBe(409);
    expect(self.body.error.code).toBe('CONFLICT');
    // A second owner: now the first may go.
    expect((await as(owner).patch(`/v1/members/${admin.id}`, { role: 'owner' })).status).toBe(200);
    const second = { ...admin };
    expect((await as(second).delete(`/v1/members/${owner.id}`)).status).toBe(200);
    expect((await as(second).delete(`/v1/members/${second.id}`)).status).toBe(409);
  });

  it('two owners demoting each other at once leave one owner', async () => {
    const { owner } = await organization('race');
    const other = await invited(owner, 'other@race.test', 'owner');
    const [a, b] = await Promise.all([as(owner).patch(`/v1/members/${other.id}`, { role: 'member' }), as(other).patch(`/v1/members/${owner.id}`, { role: 'member' })]);
    // The loser is refused either as the last owner (409: both read two owners) or, its own demotion having landed
    // before its request was read, as a member, who changes no roles (403).
    const [won, lost] = [a.status, b.status].sort();
    expect(won).toBe(200);
    expect([403, 409]).toContain(lost);
    const owners = (await as(a.status === 200 ? owner : other).get('/v1/members')).body.data.filter((m: { role: string }) => m.role === 'owner');
    expect(owners).toHaveLength(1);
  });

  it('a removed member: its sessions end, its keys are revoked for good, its token and password open nothing', async () => {
    const { org, owner } = await organization('remove');
    const member = await invited(owner, 'gone@remove.test', 'member');
    const key = await as(member).post('/v1/keys', { name: 'mine' });
    expect(key.status).toBe(201);
    const { token } = await org.accounts.issueToken(member.id);
    expect((await request(h.app).get('/v1/key').set('Authorization', `Bearer ${key.body.key}`)).status).toBe(200);
    const removed = await as(owner).delete(`/v1/members/${member.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ id: member.id, deleted: true });
    expect((await as(member).get('/v1/auth/session')).status).toBe(401);
    const byKey = await request(h.app).get('/v1/key').set('Authorization', `Bearer ${key.body.key}`);
    expect(byKey.status).toBe(401);
    expect(byKey.body.error.code).toBe('api_key_revoked');
    expect((await as(owner).patch(`/v1/keys/${key.body.id}`, { disabled: false })).status).toBe(409);
    expect((await request(h.app).get('/v1/balance').set('Authorization', `Bearer ${token}`)).status).toBe(401);
    expect((await request(h.app).post('/v1/auth/login').send({ email: 'gone@remove.test', password: PASSWORD })).status).toBe(401);
    expect((await as(owner).get('/v1/members')).body.data.map((m: { id: string }) => m.id)).toEqual([owner.id]);
    expect((await as(owner).delete(`/v1/members/${member.id}`)).status).toBe(404);
    // The address is free again.
    expect((await as(owner).post('/v1/members', { email: 'gone@remove.test', role: 'member' })).status).toBe(201);
  });

  it('another organization\'s members do not exist: 404 by id, never listed', async () => {
    const a = await organization('cross-a');
    const b = await organization('cross-b');
    const memberOfA = await invited(a.owner, 'm@cross-a.test', 'member');
    expect((await as(b.owner).patch(`/v1/members/${memberOfA.id}`, { limit: 1 })).status).toBe(404);
    expect((await as(b.owner).delete(`/v1/members/${memberOfA.id}`)).status).toBe(404);
    expect((await as(b.owner).patch(`/v1/members/${a.owner.id}`, { role: 'member' })).status).toBe(404);
    const list = (await as(b.owner).get('/v1/members')).body.data.map((m: { id: string }) => m.id);
    expect(list).toEqual([b.owner.id]);
    expect((await as(a.owner).get('/v1/auth/session')).body.user.role).toBe('owner');
  });

  it('an API key may not manage members', async () => {
    const { owner } = await organization('key');
    const key = await as(owner).post('/v1/keys', { name: 'k' });
    expect((await request(h.app).get('/v1/members').set('Authorization', `Bearer ${key.body.key}`)).status).toBe(403);
  });
});
