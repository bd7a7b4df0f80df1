import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { TEST_SECRET } from '../helpers/fixtures';
import { runCli } from '../../shared/cli/main';
import { forgetEndedSessions, SESSION_IDLE_MS, SESSION_MAX_MS } from '../../shared/services/sessions.service';
import { LOGIN_LIMITS, LoginThrottle } from '../../shared/auth/login-throttle';
import { SessionGate } from '../../api/middleware/session';
import { hashSecret } from '../../shared/auth/secrets';

/**
 * The personal account's sign-in (decisions.md section 8), attacked as a browser would be: CSRF without the header, a
 * foreign Origin, a stolen cookie after logout, the sixth wrong password, session fixation, user enumeration.
 */
let h: TestApp;
let now = Date.now();
const PASSWORD = 'correct horse battery';

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0, clock: () => new Date(now) } });
});
afterAll(() => h.close());

async function cli(args: string[]): Promise<Record<string, string>> {
  let out = '';
  let err = '';
  const code = await runCli([...args, '--json'], {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    env: { DATABASE_URL: h.t.url, SWITCHYARD_SECRET: TEST_SECRET, PUBLIC_BASE_URL: 'https://gw.example.com/' },
  });
  expect({ code, err }).toEqual({ code: 0, err: '' });
  return JSON.parse(out);
}

/** A new organization whose owner (e-mail given) accepted its invite: the owner's cookie and CSRF token. */
async function ownerSignedIn(email: string) {
  const org = await cli(['org', 'create', '--name', 'Acme', '--balance', '100', '--owner-email', email]);
  const res = await request(h.app).post('/v1/auth/invite').send({ token: org.ownerInviteToken, password: PASSWORD });
  expect(res.status).toBe(200);
  return { org, ...signedIn(res) };
}

function cookieOf(res: request.Response): string {
  const set = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const value = /^sy_session=([^;]*)/.exec(set[0] ?? '')?.[1];
  if (!value) throw new Error(`no sy_session cookie in ${JSON.stringify(set)}`);
  return value;
}
function signedIn(res: request.Response) {
  return { cookie: cookieOf(res), csrf: res.body.csrfToken as string, body: res.body };
}
const login = (email: string, password: string) => request(h.app).post('/v1/auth/login').send({ email, password });
const withCookie = (cookie: string) => ({ Cookie: `sy_session=${cookie}` });
const without = (body: { error: Record<string, unknown> }) => ({ ...body.error, trace_id: undefined });

describe('invites, passwords and the CLI', () => {
  it('org create --owner-email, user invite and user reset-password print the links of section 8, token in the fragment', async () => {
    const org = await cli(['org', 'create', '--name', 'Links', '--owner-email', 'Owner@Links.test']);
    expect(org.ownerInviteUrl).toBe(`https://gw.example.com/console/invite#token=${org.ownerInviteToken}`);
    const invited = await cli(['user', 'invite', '--org', org.organizationId, '--email', 'm@links.test', '--role', 'member', '--limit', '5', '--reset', 'daily']);
    expect(Object.keys(invited).sort()).toEqual(['inviteToken', 'inviteUrl', 'userId']);
    expect(invited.inviteUrl).toBe(`https://gw.example.com/console/invite#token=${invited.inviteToken}`);
    const reset = await cli(['user', 'reset-password', '--user', invited.userId]);
    expect(Object.keys(reset).sort()).toEqual(['resetToken', 'resetUrl']);
    expect(reset.resetUrl).toBe(`https://gw.example.com/console/reset#token=${reset.resetToken}`);
    // Only hashes are stored.
    const stored = await h.t.db.userToken.findMany({ where: { userId: invited.userId } });
    expect(stored.map((t) => t.tokenHash).sort()).toEqual([hashSecret(invited.inviteToken), hashSecret(reset.resetToken)].sort());
    expect(JSON.stringify(stored)).not.toContain(invited.inviteToken);
  });

  it('one e-mail is one user in the whole installation: user invite with an address in use exits 1', async () => {
    const a = await cli(['org', 'create', '--name', 'A', '--owner-email', 'taken@example.com']);
    let err = '';
    const code = await runCli(['user', 'invite', '--org', a.organizationId, '--email', 'TAKEN@example.com', '--role', 'member', '--json'], {
      stdout: { write: () => true },
      stderr: { write: (s: string) => (err += s) },
      env: { DATABASE_URL: h.t.url, SWITCHYARD_SECRET: TEST_SECRET },
    });
    expect(code).toBe(1);
    expect(err).toMatch(/already exists/);
  });

  it('an invite sets the password once: a short password is a 400 and leaves the token usable; a second use is a 401', async () => {
    const org = await cli(['org', 'create', '--name', 'Once', '--owner-email', 'once@example.com']);
    const short = await request(h.app).post('/v1/auth/invite').send({ token: org.ownerInviteToken, password: 'short' });
    expect(short.status).toBe(400);
    expect(short.body.error.metadata.reason).toBe('validation_failed');
    const ok = await request(h.app).post('/v1/auth/invite').send({ token: org.ownerInviteToken, password: PASSWORD });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ user: { id: org.ownerUserId, email: 'once@example.com', role: 'owner' }, organization: { id: org.organizationId, name: 'Once' }, csrfToken: expect.any(String) });
    const cookie = ([] as string[]).concat(ok.headers['set-cookie'])[0];
    expect(cookie).toMatch(/^sy_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=604800; HttpOnly; SameSite=Lax$/);
    const again = await request(h.app).post('/v1/auth/invite').send({ token: org.ownerInviteToken, password: PASSWORD });
    expect(again.status).toBe(401);
    // An invite token is not a reset token.
    const reset = await cli(['user', 'reset-password', '--user', org.ownerUserId]);
    expect((await request(h.app).post('/v1/auth/invite').send({ token: reset.resetToken, password: PASSWORD })).status).toBe(401);
    // The password is stored under scrypt with its parameters.
    const user = await h.t.db.user.findUniqueOrThrow({ where: { id: org.ownerUserId } });
    expect(user.passwordHash).toMatch(/^scrypt\$32768\$8\$3\$[\w-]{22}\$[\w-]{43}$/);
  });

  it('an expired invite is a 401', async () => {
    const org = await cli(['org', 'create', '--name', 'Late', '--owner-email', 'late@example.com']);
    const start = now;
    // The CLI issued the token by the real clock.
    now = Date.now() + 7 * 24 * 3600_000 + 60_000;
    try {
      expect((await request(h.app).post('/v1/auth/invite').send({ token: org.ownerInviteToken, password: PASSWORD })).status).toBe(401);
    } finally {
      now = start;
    }
  });

  it('a reset token works for an hour, sets the new password and ends every session of the user', async () => {
    const owner = await ownerSignedIn('reset@example.com');
    const second = signedIn(await login('reset@example.com', PASSWORD));
    const reset = await cli(['user', 'reset-password', '--user', owner.org.ownerUserId]);
    const used = await request(h.app).post('/v1/auth/reset').send({ token: reset.resetToken, password: 'a new password 2' });
    expect(used.status).toBe(200);
    for (const s of [owner, second]) expect((await request(h.app).get('/v1/auth/session').set(withCookie(s.cookie))).status).toBe(401);
    expect((await request(h.app).get('/v1/auth/session').set(withCookie(cookieOf(used)))).status).toBe(200);
    expect((await login('reset@example.com', PASSWORD)).status).toBe(401);
    expect((await login('reset@example.com', 'a new password 2')).status).toBe(200);
    const late = await cli(['user', 'reset-password', '--user', owner.org.ownerUserId]);
    const start = now;
    now = Date.now() + 3600_000 + 60_000;
    try {
      expect((await request(h.app).post('/v1/auth/reset').send({ token: late.resetToken, password: 'a third password' })).status).toBe(401);
    } finally {
      now = start;
    }
  });
});

describe('the session on the API', () => {
  it('GET /v1/auth/session answers the login body; the cookie has the rights of the personal-account token', async () => {
    const owner = await ownerSignedIn('rights@example.com');
    const session = await request(h.app).get('/v1/auth/session').set(withCookie(owner.cookie));
    expect(session.status).toBe(200);
    expect(session.body).toEqual(owner.body);
    expect((await request(h.app).get('/v1/keys').set(withCookie(owner.cookie))).status).toBe(200);
    expect((await request(h.app).get('/v1/balance').set(withCookie(owner.cookie))).status).toBe(200);
    const key = await request(h.app).get('/v1/key').set(withCookie(owner.cookie));
    expect(key.status).toBe(400);
  });

  it('CSRF: an unsafe method without X-CSRF-Token, or with another session\'s, is a 403; with its own it passes', async () => {
    const owner = await ownerSignedIn('csrf@example.com');
    const other = await ownerSignedIn('csrf-other@example.com');
    const none = await request(h.app).post('/v1/keys').set(withCookie(owner.cookie)).send({ name: 'x' });
    expect(none.status).toBe(403);
    expect(none.body.error.code).toBe('FORBIDDEN');
    const foreign = await request(h.app).post('/v1/keys').set(withCookie(owner.cookie)).set('X-CSRF-Token', other.csrf).send({ name: 'x' });
    expect(foreign.status).toBe(403);
    const ok = await request(h.app).post('/v1/keys').set(withCookie(owner.cookie)).set('X-CSRF-Token', owner.csrf).send({ name: 'x' });
    expect(ok.status).toBe(201);
    for (const method of ['patch', 'delete'] as const) {
      expect((await request(h.app)[method](`/v1/keys/${ok.body.id}`).set(withCookie(owner.cookie)).send({ name: 'y' })).status).toBe(403);
    }
    expect((await request(h.app).post('/v1/auth/logout').set(withCookie(owner.cookie))).status).toBe(403);
  });

  it('a foreign Origin is a 403 even with the right CSRF token; sign-in from a foreign Origin too', async () => {
    const owner = await ownerSignedIn('origin@example.com');
    const res = await request(h.app).post('/v1/keys').set(withCookie(owner.cookie)).set('X-CSRF-Token', owner.csrf).set('Origin', 'https://evil.example').send({ name: 'x' });
    expect(res.status).toBe(403);
    expect((await login('origin@example.com', PASSWORD).set('Origin', 'https://evil.example')).status).toBe(403);
    // The service's own origin (no PUBLIC_BASE_URL here: the one the request was addressed to) passes.
    const own = await request(h.app).post('/v1/keys').set(withCookie(owner.cookie)).set('X-CSRF-Token', owner.csrf).set('Host', 'gw.local:8080').set('Origin', 'http://gw.local:8080').send({ name: 'x' });
    expect(own.status).toBe(201);
  });

  it('a request with an Authorization header is judged by it alone, the cookie unread', async () => {
    const owner = await ownerSignedIn('header@example.com');
    const bad = await request(h.app).get('/v1/keys').set(withCookie(owner.cookie)).set('Authorization', 'Bearer nonsense');
    expect(bad.status).toBe(401);
    const key = await request(h.app).post('/v1/keys').set(withCookie(owner.cookie)).set('X-CSRF-Token', owner.csrf).send({ name: 'k' });
    // A key's own request needs no CSRF token, whatever cookie rides along.
    const byKey = await request(h.app).get('/v1/key').set('Authorization', `Bearer ${key.body.key}`).set(withCookie(owner.cookie));
    expect(byKey.status).toBe(200);
  });

  it('a stolen cookie after logout is a 401 on every route', async () => {
    const owner = await ownerSignedIn('stolen@example.com');
    const out = await request(h.app).post('/v1/auth/logout').set(withCookie(owner.cookie)).set('X-CSRF-Token', owner.csrf);
    expect(out.status).toBe(204);
    expect(([] as string[]).concat(out.headers['set-cookie'])[0]).toMatch(/^sy_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax$/);
    for (const path of ['/v1/auth/session', '/v1/keys', '/v1/balance']) {
      const res = await request(h.app).get(path).set(withCookie(owner.cookie));
      expect(res.status).toBe(401);
    }
    expect(await h.t.db.session.count({ where: { tokenHash: hashSecret(owner.cookie) } })).toBe(0);
  });

  it('session fixation: a cookie value the browser had before signing in is never adopted', async () => {
    await ownerSignedIn('fixation@example.com');
    const planted = 'attacker-chosen-value-AAAAAAAAAAAAAAAAAAAAAAAA';
    const res = await login('fixation@example.com', PASSWORD).set(withCookie(planted));
    expect(res.status).toBe(200);
    expect(cookieOf(res)).not.toBe(planted);
    expect((await request(h.app).get('/v1/auth/session').set(withCookie(planted))).status).toBe(401);
    expect((await request(h.app).get('/v1/auth/session').set(withCookie(cookieOf(res)))).status).toBe(200);
  });

  it('a session ends after 12 hours idle, and after 7 days however busy', async () => {
    const owner = await ownerSignedIn('idle@example.com');
    const start = now;
    try {
      now += SESSION_IDLE_MS - 60_000;
      expect((await request(h.app).get('/v1/auth/session').set(withCookie(owner.cookie))).status).toBe(200);
      now += SESSION_IDLE_MS - 60_000;
      expect((await request(h.app).get('/v1/auth/session').set(withCookie(owner.cookie))).status).toBe(200);
      now += SESSION_IDLE_MS + 1000;
      expect((await request(h.app).get('/v1/auth/session').set(withCookie(owner.cookie))).status).toBe(401);

      now = start;
      const busy = signedIn(await login('idle@example.com', PASSWORD));
      while (now < start + SESSION_MAX_MS - SESSION_IDLE_MS) {
        now += SESSION_IDLE_MS - 60_000;
        expect((await request(h.app).get('/v1/auth/session').set(withCookie(busy.cookie))).status).toBe(200);
      }
      now = start + SESSION_MAX_MS + 1000;
      expect((await request(h.app).get('/v1/auth/session').set(withCookie(busy.cookie))).status).toBe(401);
    } finally {
      now = start;
    }
  });

  it("the maintenance sweep deletes the sessions that are over and the links used or expired, and no one else's", async () => {
    const owner = await ownerSignedIn('sweep@example.com');
    const other = await ownerSignedIn('sweep-fresh@example.com');
    const reset = await cli(['user', 'reset-password', '--user', other.body.user.id]);
    const sessionsOf = async (email: string) =>
      Number((await h.t.pool.query(`SELECT count(*) FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = $1`, [email])).rows[0].count);
    const linksOf = async (email: string) =>
      Number((await h.t.pool.query(`SELECT count(*) FROM user_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = $1`, [email])).rows[0].count);
    expect([await sessionsOf('sweep@example.com'), await linksOf('sweep@example.com'), await linksOf('sweep-fresh@example.com')]).toEqual([1, 1, 2]);
    // The first owner's session left idle; the other's kept busy. The used invites go; the unused reset link stays.
    await h.t.pool.query(`UPDATE sessions s SET last_seen_at = $2 FROM users u WHERE u.id = s.user_id AND u.email = $1`, [
      'sweep@example.com',
      new Date(now - SESSION_IDLE_MS - 1000),
    ]);
    // Other tests' sessions and links may go too: the counts are at least these users'.
    const swept = await forgetEndedSessions(h.t.db, new Date(now));
    expect(swept.sessions).toBeGreaterThanOrEqual(1);
    expect(swept.links).toBeGreaterThanOrEqual(2);
    expect([await sessionsOf('sweep@example.com'), await sessionsOf('sweep-fresh@example.com'), await linksOf('sweep-fresh@example.com')]).toEqual([0, 1, 1]);
    expect((await request(h.app).get('/v1/auth/session').set(withCookie(owner.cookie))).status).toBe(401);
    expect((await request(h.app).get('/v1/auth/session').set(withCookie(other.cookie))).status).toBe(200);
    // The reset link still works.
    expect((await request(h.app).post('/v1/auth/reset').send({ token: reset.resetToken, password: 'a new password 3' })).status).toBe(200);
  });

  it('a changed role and a removed user are seen on the next request', async () => {
    const owner = await ownerSignedIn('roles@example.com');
    const invited = await cli(['user', 'invite', '--org', owner.org.organizationId, '--email', 'admin@roles.test', '--role', 'admin']);
    const admin = signedIn(await request(h.app).post('/v1/auth/invite').send({ token: invited.inviteToken, password: PASSWORD }));
    expect(admin.body.user.role).toBe('admin');
    await h.t.db.user.update({ where: { id: invited.userId }, data: { role: 'member' } });
    expect((await request(h.app).get('/v1/auth/session').set(withCookie(admin.cookie))).body.user.role).toBe('member');
    await h.t.db.user.update({ where: { id: invited.userId }, data: { removedAt: new Date(now) } });
    expect((await request(h.app).get('/v1/auth/session').set(withCookie(admin.cookie))).status).toBe(401);
    expect((await login('admin@roles.test', PASSWORD)).status).toBe(401);
  });
});

describe('sign-in refuses guessing', () => {
  it('an unknown e-mail and a wrong password answer the same 401', async () => {
    await ownerSignedIn('enum@example.com');
    const wrong = await login('enum@example.com', 'not the password');
    const unknown = await login('nobody@example.com', 'not the password');
    const invitedOnly = await cli(['org', 'create', '--name', 'Inv', '--owner-email', 'invited-only@example.com']);
    const invited = await login('invited-only@example.com', 'not the password');
    expect(invitedOnly.ownerInviteToken).toBeDefined();
    for (const r of [wrong, unknown, invited]) {
      expect(r.status).toBe(401);
      expect(r.headers['set-cookie']).toBeUndefined();
    }
    expect(without(unknown.body)).toEqual(without(wrong.body));
    expect(without(invited.body)).toEqual(without(wrong.body));
  });

  it('the sixth wrong password in 15 minutes is a 429 with Retry-After, and so is the right one until the window passes', async () => {
    await ownerSignedIn('guess@example.com');
    for (let i = 0; i < LOGIN_LIMITS.perEmail; i++) expect((await login('guess@example.com', `wrong guess ${i}`)).status).toBe(401);
    const sixth = await login('GUESS@example.com', 'wrong guess 6');
    expect(sixth.status).toBe(429);
    expect(sixth.body.error.code).toBe('TOO_MANY_REQUESTS');
    expect(Number(sixth.headers['retry-after'])).toBeGreaterThan(800);
    expect(Number(sixth.headers['retry-after'])).toBeLessThanOrEqual(900);
    expect((await login('guess@example.com', PASSWORD)).status).toBe(429);
    // Another e-mail from the same address is not held up by this one's failures.
    await ownerSignedIn('other-guess@example.com');
    expect((await login('other-guess@example.com', PASSWORD)).status).toBe(200);
  });

  it('attempts sent at once cannot all pass the check: no more than five get their password checked', async () => {
    await ownerSignedIn('burst@example.com');
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => login('burst@example.com', `burst guess ${i}`)));
    expect(answers.filter((r) => r.status === 401)).toHaveLength(LOGIN_LIMITS.perEmail);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(12 - LOGIN_LIMITS.perEmail);
  });

  it('per client address: after 50 failures whatever the e-mail, the address waits', async () => {
    const throttle = new LoginThrottle(h.redis, `${h.prefix}:addr-test`);
    for (let i = 0; i < LOGIN_LIMITS.perAddress; i++) expect(await throttle.attempt(`victim${i}@example.com`, '203.0.113.7')).toBe(0);
    expect(await throttle.attempt('fresh@example.com', '203.0.113.7')).toBeGreaterThan(0);
    expect(await throttle.attempt('fresh@example.com', '203.0.113.8')).toBe(0);
  });
});

describe('the cookie', () => {
  it('is Secure when PUBLIC_BASE_URL is https', () => {
    const headers: Record<string, string> = {};
    const res = { setHeader: (k: string, v: string) => (headers[k] = v) } as never;
    new SessionGate(h.app.locals.ctx.sessionGate.sessions, 'https://gw.example.com').setCookie(res, 'v');
    expect(headers['Set-Cookie']).toBe('sy_session=v; Path=/; Max-Age=604800; HttpOnly; SameSite=Lax; Secure');
  });
});
