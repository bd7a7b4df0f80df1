import { timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/client';
import { AppError } from '../errors/app-error';
import { hashPassword, passwordProblem, verifyPassword } from '../auth/passwords';
import { csrfTokenFor, hashSecret, newOpaqueSecret } from '../auth/secrets';
import type { LoginThrottle } from '../auth/login-throttle';
import type { Principal } from '../auth/principal';
import type { Role } from '../auth/tokens';

/** The cookie of a browser session and its lifetimes (decisions.md section 8). */
export const SESSION_COOKIE = 'sy_session';
export const SESSION_IDLE_MS = 12 * 3600_000;
export const SESSION_MAX_MS = 7 * 24 * 3600_000;
/** How long an invite and a password-reset token work. */
export const TOKEN_TTL_MS = { invite: 7 * 24 * 3600_000, reset: 3600_000 } as const;
export type UserTokenKind = keyof typeof TOKEN_TTL_MS;

/** What login, invite, reset and GET /v1/auth/session answer. */
export interface SignedIn {
  user: { id: string; email: string; role: Role };
  organization: { id: string; name: string };
  csrfToken: string;
}

/** A request's session: who it is (with the rights of its personal-account token) and the sign-in body. */
export interface SessionView {
  principal: Extract<Principal, { kind: 'user' }>;
  signedIn: SignedIn;
}

interface UserRow {
  id: string;
  email: string;
  role: Role;
  organization_id: string;
  organization_name: string;
  rate_limit_per_minute: number | null;
  max_concurrency: number | null;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const unauthorized = () => new AppError('UNAUTHORIZED', 'Wrong e-mail or password');

/**
 * Sign-in, sessions and the one-time tokens that set a password. The session is checked against PostgreSQL on every
 * request (no cache): a removed user, a changed role or an ended session is seen on the next request.
 */
/**
 * Deletes the sessions that are over (past SESSION_MAX_MS, or idle SESSION_IDLE_MS) and the invitation and reset links
 * that can no longer be used (used or expired): the maintenance job's sweep, so that neither table grows with people
 * who never sign in again. Returns how many of each went.
 */
export async function forgetEndedSessions(db: Db, now: Date): Promise<{ sessions: number; links: number }> {
  const idleSince = new Date(now.getTime() - SESSION_IDLE_MS);
  const sessions = await db.$executeRaw`DELETE FROM sessions WHERE expires_at <= ${now} OR last_seen_at <= ${idleSince}`;
  const links = await db.$executeRaw`DELETE FROM user_tokens WHERE used_at IS NOT NULL OR expires_at <= ${now}`;
  return { sessions, links };
}

export class SessionsService {
  constructor(
    private readonly db: Db,
    private readonly secret: string,
    private readonly throttle: LoginThrottle,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * E-mail and password to a new session. An unknown e-mail and a wrong password are the same 401, and take as long
   * (a dummy hash is computed); throttled per e-mail and per client address before the password is looked at.
   */
  async login(emailInput: string, password: string, address: string): Promise<{ cookie: string; signedIn: SignedIn }> {
    const email = normalizeEmail(emailInput);
    const waitMs = await this.throttle.attempt(email, address);
    if (waitMs > 0) {
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      throw new AppError('TOO_MANY_REQUESTS', `Too many failed sign-ins: try again in ${seconds} s`, { headers: { 'Retry-After': String(seconds) } });
    }
    const [found] = await this.db.$queryRaw<Array<{ id: string; password_hash: string | null }>>`
      SELECT id, password_hash FROM users WHERE email = ${email} AND removed_at IS NULL`;
    const right = await verifyPassword(password, found?.password_hash ?? null);
    if (!found || !right) throw unauthorized();
    await this.throttle.succeeded(email, address);
    return this.start(found.id);
  }

  /**
   * An invite or reset token and a new password: the password is set, the token used up (with every other token of
   * the user), and the user signed in. A reset ends every other session of the user first. A bad password is a 400 and
   * leaves the token usable; a used, expired or unknown token is a 401.
   */
  async redeem(kind: UserTokenKind, token: string, password: string): Promise<{ cookie: string; signedIn: SignedIn }> {
    const problem = passwordProblem(password);
    if (problem) throw AppError.validation([{ path: '/password', message: problem }]);
    const passwordHash = await hashPassword(password);
    const now = this.clock();
    const userId = await this.db.$transaction(async (tx) => {
      const [used] = await tx.$queryRaw<Array<{ user_id: string }>>`
        UPDATE user_tokens t SET used_at = ${now}
          FROM users u
         WHERE t.token_hash = ${hashSecret(token)} AND t.kind = ${kind} AND t.used_at IS NULL AND t.expires_at > ${now}
           AND u.id = t.user_id AND u.removed_at IS NULL
        RETURNING t.user_id`;
      if (!used) return null;
      await tx.$executeRaw`UPDATE user_tokens SET used_at = ${now} WHERE user_id = ${used.user_id} AND used_at IS NULL`;
      await tx.$executeRaw`UPDATE users SET password_hash = ${passwordHash} WHERE id = ${used.user_id}`;
      if (kind === 'reset') await tx.$executeRaw`DELETE FROM sessions WHERE user_id = ${used.user_id}`;
      return used.user_id;
    });
    if (!userId) throw new AppError('UNAUTHORIZED', 'This link is used, expired or unknown: ask for a new one');
    return this.start(userId);
  }

  /** The session of a cookie's value, touched (its idle time starts again), or null when it is unknown or over. */
  async resolve(cookie: string): Promise<SessionView | null> {
    const now = this.clock();
    const idleSince = new Date(now.getTime() - SESSION_IDLE_MS);
    const [row] = await this.db.$queryRaw<UserRow[]>`
      WITH s AS (
        UPDATE sessions SET last_seen_at = ${now}
         WHERE token_hash = ${hashSecret(cookie)} AND expires_at > ${now} AND last_seen_at > ${idleSince}
        RETURNING user_id)
      SELECT u.id, u.email, u.role::text AS role, u.organization_id, o.name AS organization_name,
             o.rate_limit_per_minute, o.max_concurrency
        FROM s JOIN users u ON u.id = s.user_id AND u.removed_at IS NULL
        JOIN organizations o ON o.id = u.organization_id`;
    if (!row) return null;
    return {
      principal: { kind: 'user', organizationId: row.organization_id, userId: row.id, role: row.role, rateLimitPerMinute: row.rate_limit_per_minute, maxConcurrency: row.max_concurrency, session: true },
      signedIn: this.body(row, cookie),
    };
  }

  /** Whether `given` is the CSRF token of the session of `cookie` (compared in constant time). */
  csrfMatches(cookie: string, given: string | undefined): boolean {
    if (!given) return false;
    const expected = Buffer.from(csrfTokenFor(cookie, this.secret));
    const actual = Buffer.from(given);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }

  /** Ends the session of a cookie's value (logout). */
  async end(cookie: string): Promise<void> {
    await this.db.$executeRaw`DELETE FROM sessions WHERE token_hash = ${hashSecret(cookie)}`;
  }

  /** Ends every session of a user (a password reset, a removal). */
  async endAllOf(userId: string): Promise<void> {
    await this.db.$executeRaw`DELETE FROM sessions WHERE user_id = ${userId}`;
  }

  /** A new session with a new random value: a value the browser already had is never adopted (session fixation). */
  private async start(userId: string): Promise<{ cookie: string; signedIn: SignedIn }> {
    const cookie = newOpaqueSecret();
    const now = this.clock();
    const idleSince = new Date(now.getTime() - SESSION_IDLE_MS);
    // The user's sessions that are over go as a new one starts (and with everyone's, at the maintenance sweep).
    await this.db.$executeRaw`DELETE FROM sessions WHERE user_id = ${userId} AND (expires_at <= ${now} OR last_seen_at <= ${idleSince})`;
    await this.db.session.create({ data: { tokenHash: hashSecret(cookie), userId, createdAt: now, lastSeenAt: now, expiresAt: new Date(now.getTime() + SESSION_MAX_MS) } });
    const [row] = await this.db.$queryRaw<UserRow[]>`
      SELECT u.id, u.email, u.role::text AS role, u.organization_id, o.name AS organization_name, o.rate_limit_per_minute, o.max_concurrency
        FROM users u JOIN organizations o ON o.id = u.organization_id WHERE u.id = ${userId}`;
    return { cookie, signedIn: this.body(row, cookie) };
  }

  private body(row: UserRow, cookie: string): SignedIn {
    return { user: { id: row.id, email: row.email, role: row.role }, organization: { id: row.organization_id, name: row.organization_name }, csrfToken: csrfTokenFor(cookie, this.secret) };
  }
}
