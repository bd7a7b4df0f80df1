import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Passwords under scrypt (RFC 7914), memory-hard, stored with their parameters so they can be raised later without
 * invalidating stored hashes: `scrypt$<N>$<r>$<p>$<salt b64url>$<hash b64url>`. N=2^15, r=8, p=3 is one of OWASP's
 * equivalent scrypt settings (32 MiB per hash; Password Storage Cheat Sheet), chosen over N=2^17 to keep a login's
 * memory small on a small machine. Hashing runs on libuv's thread pool (crypto.scrypt), not on the event loop.
 */
export const PASSWORD_PARAMS = { N: 2 ** 15, r: 8, p: 3 } as const;
const KEY_LENGTH = 32;
export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 256;

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (e, key) => (e ? reject(e) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PASSWORD_PARAMS);
  const { N, r, p } = PASSWORD_PARAMS;
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/**
 * Whether `password` is the one `stored` was made from. With no stored hash (an unknown e-mail, a user only invited),
 * a dummy hash of the same cost is computed all the same, so the answer takes as long as for a wrong password.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parts = (stored ?? '').split('$');
  const valid = parts.length === 6 && parts[0] === 'scrypt';
  const params = valid ? { N: Number(parts[1]), r: Number(parts[2]), p: Number(parts[3]) } : PASSWORD_PARAMS;
  const salt = valid ? Buffer.from(parts[4], 'base64url') : Buffer.alloc(16);
  const expected = valid ? Buffer.from(parts[5], 'base64url') : Buffer.alloc(KEY_LENGTH);
  const key = await derive(password, salt, params);
  return valid && key.length === expected.length && timingSafeEqual(key, expected);
}

/** What is wrong with a new password, or null: 10 to 256 characters (decisions.md section 8). */
export function passwordProblem(password: unknown): string | null {
  if (typeof password !== 'string') return 'password must be a string';
  const length = [...password].length;
  if (length < PASSWORD_MIN) return `password must have at least ${PASSWORD_MIN} characters`;
  if (length > PASSWORD_MAX) return `password must have at most ${PASSWORD_MAX} characters`;
  return null;
}
