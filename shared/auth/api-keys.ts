import { createHash, randomBytes, randomInt } from 'node:crypto';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const KEY_PREFIX = 'sy_';
export const KEY_PATTERN = /^sy_[A-Za-z0-9]{40}$/;

export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

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

/** Prefixed random identifiers (`org_`, `usr_`, `key_`, `gen_`, `file_`). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(24)}`;
}

export function newSecret(): string {
  return randomBytes(32).toString('hex');
}
