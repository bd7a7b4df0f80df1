import { createHash, randomBytes } from 'node:crypto';
import { randomBase62 } from '../ids';

export const KEY_PREFIX = 'sy_';
export const KEY_PATTERN = /^sy_[A-Za-z0-9]{40}$/;

/** A new API key: `sy_` + 40 random base62 characters (decisions.md section 2). */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBase62(40);
}

/** Only this hash is stored. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** `sy_...a1B2c3`: the masked form shown instead of the key. */
export function keyLabel(key: string): string {
  return `${KEY_PREFIX}...${key.slice(-6)}`;
}

export function newSecret(): string {
  return randomBytes(32).toString('hex');
}
