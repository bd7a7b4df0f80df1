import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Operator tokens (decisions.md section 1): the credential of the people who run Switchyard, issued by
 * `switchyard operator token issue`. They open the queue dashboard and nothing else: they carry no
 * organization, and they are signed with a key derived from SWITCHYARD_SECRET for this purpose only, so an
 * operator token never verifies as a personal-account token, nor a personal-account token as an operator token.
 * They are stateless: they end at `exp`, and rotating SWITCHYARD_SECRET ends them all (docs/operator.md).
 */
export interface OperatorClaims {
  typ: 'operator';
  sub: string;
  exp: number;
  iat: number;
}

export const DEFAULT_OPERATOR_TOKEN_TTL_SECONDS = 12 * 3600;

const b64url = (buf: Buffer | string) => Buffer.from(buf).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

function operatorKey(secret: string): Buffer {
  return createHmac('sha256', secret).update('switchyard operator token v1').digest();
}

export function signOperatorToken(secret: string, ttlSeconds = DEFAULT_OPERATOR_TOKEN_TTL_SECONDS, now = Date.now()): string {
  const iat = Math.floor(now / 1000);
  const claims: OperatorClaims = { typ: 'operator', sub: 'operator', iat, exp: iat + ttlSeconds };
  const payload = b64url(JSON.stringify(claims));
  const sig = createHmac('sha256', operatorKey(secret)).update(`${HEADER}.${payload}`).digest('base64url');
  return `${HEADER}.${payload}.${sig}`;
}

/** The claims of a valid, unexpired operator token, or null. */
export function verifyOperatorToken(token: string, secret: string, now = Date.now()): OperatorClaims | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [header, payload, sig] = parts;
  try {
    if (JSON.parse(Buffer.from(header, 'base64url').toString('utf8')).alg !== 'HS256') return null;
    const expected = createHmac('sha256', operatorKey(secret)).update(`${header}.${payload}`).digest();
    const given = Buffer.from(sig, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as OperatorClaims;
    if (claims.typ !== 'operator' || typeof claims.exp !== 'number' || claims.exp * 1000 <= now) return null;
    return claims;
  } catch {
    return null;
  }
}
