import type { Request, Response } from 'express';
import { AppError } from '../../shared/errors/app-error';
import { SESSION_COOKIE, SESSION_MAX_MS, type SessionView, type SessionsService } from '../../shared/services/sessions.service';

/** A request's browser session: who it is, its sign-in body, and the cookie's value (logout ends it). */
export interface RequestSession extends SessionView {
  cookie: string;
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The value of the first `sy_session` cookie of a `Cookie` header, if any. */
export function sessionCookieOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at < 0 || part.slice(0, at).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(at + 1).trim();
    return value === '' ? undefined : value;
  }
  return undefined;
}

/**
 * The browser session on the API (decisions.md section 8). The cookie is the person's personal-account token in
 * another form; what a cookie adds is that the browser sends it by itself, also on requests another site makes it
 * send, hence: an unsafe method needs `X-CSRF-Token` equal to the session's token (which only a page that read
 * the sign-in answer has) and an `Origin`, when the browser sends one, equal to this service's own.
 */
export class SessionGate {
  private readonly publicOrigin?: string;
  /** `Secure` on the cookie: PUBLIC_BASE_URL is https. */
  readonly secure: boolean;

  constructor(
    readonly sessions: SessionsService,
    publicBaseUrl: string | undefined,
  ) {
    this.publicOrigin = publicBaseUrl ? new URL(publicBaseUrl).origin : undefined;
    this.secure = this.publicOrigin?.startsWith('https:') ?? false;
  }

  async authenticate(req: Request, cookie: string): Promise<RequestSession> {
    const view = await this.sessions.resolve(cookie);
    if (!view) throw new AppError('UNAUTHORIZED', 'Your session has ended: sign in again');
    if (UNSAFE.has(req.method)) {
      this.checkOrigin(req);
      const given = req.headers['x-csrf-token'];
      if (!this.sessions.csrfMatches(cookie, typeof given === 'string' ? given : undefined)) {
        throw new AppError('FORBIDDEN', 'A request signed in by the session cookie needs the X-CSRF-Token header of its session (csrfToken of the sign-in answer)');
      }
    }
    return { ...view, cookie };
  }

  /**
   * An `Origin` other than this service's own is refused: PUBLIC_BASE_URL's origin when set, else the origin the
   * request was addressed to (its Host). A request without one (not a browser's, or a same-origin GET) passes.
   */
  checkOrigin(req: Request): void {
    const origin = req.headers.origin;
    if (origin === undefined) return;
    const own = this.publicOrigin ?? `${req.protocol}://${req.headers.host ?? ''}`;
    if (origin !== own) throw new AppError('FORBIDDEN', `Requests from the origin ${origin} are not accepted: only from ${own}`);
  }

  /** Sets the session cookie of a new session. */
  setCookie(res: Response, value: string): void {
    res.setHeader('Set-Cookie', this.cookie(value, Math.floor(SESSION_MAX_MS / 1000)));
  }

  clearCookie(res: Response): void {
    res.setHeader('Set-Cookie', this.cookie('', 0));
  }

  private cookie(value: string, maxAgeSeconds: number): string {
    return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${this.secure ? '; Secure' : ''}`;
  }
}
