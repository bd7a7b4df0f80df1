import { createHash, timingSafeEqual } from 'node:crypto';

/** `Authorization: Bearer <token>` equals `token`, compared in constant time (hashes have equal length). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer (\S+)$/.exec(header ?? '');
  if (!m) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(m[1]), digest(token));
}
