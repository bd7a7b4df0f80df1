import { createHash, createHmac, randomBytes } from 'node:crypto';

/**
 * Opaque secrets people's browsers and links carry (decisions.md section 8): a session cookie's value, an invite or
 * reset token. 32 random bytes; only their SHA-256 is stored, so a copy of the database opens no session.
 */
export function newOpaqueSecret(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/**
 * A session's CSRF token: derived from its cookie's value and SWITCHYARD_SECRET, so nothing more is stored and it
 * cannot be computed without the cookie (which script cannot read: HttpOnly).
 */
export function csrfTokenFor(cookieValue: string, secret: string): string {
  return createHmac('sha256', secret).update(`sy_csrf:${cookieValue}`).digest('base64url');
}
