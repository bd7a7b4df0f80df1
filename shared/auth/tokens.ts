import { createHmac, timingSafeEqual } from 'node:crypto';

/** Personal-account tokens: JWT, HS256, signed with SWITCHYARD_SECRET (decisions.md section 2). */
export type Role = 'owner' | 'admin' | 'member';

export interface TokenClaims {
  sub: string;
  org: string;
  role: Role;
  exp: number;
  iat?: number;
}

const b64url = (buf: Buffer | string) => Buffer.from(buf).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

export function signToken(claims: Omit<TokenClaims, 'iat'>, secret: string, now = Date.now()): string {
  const payload = b64url(JSON.stringify({ ...claims, iat: Math.floor(now / 1000) }));
  const sig = createHmac('sha256', secret).update(`${HEADER}.${payload}`).digest('base64url');
  return `${HEADER}.${payload}.${sig}`;
}

/** The claims of a valid, unexpired token, or null. Only HS256 is accepted (no `alg: none` tricks). */
export function verifyToken(token: string, secret: string, now = Date.now()): TokenClaims | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [header, payload, sig] = parts;
  try {
    const h = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
    if (h.alg !== 'HS256') return null;
    const expected = createHmac('sha256', secret).update(`${header}.${payload}`).digest();
    const given = Buffer.from(sig, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as TokenClaims;
    if (typeof claims.sub !== 'string' || typeof claims.org !== 'string') return null;
    if (!['owner', 'admin', 'member'].includes(claims.role)) return null;
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now) return null;
    return claims;
  } catch {
    return null;
  }
}

export function looksLikeJwt(token: string): boolean {
  return token.startsWith('eyJ') && token.split('.').length === 3;
}
