import { randomInt } from 'node:crypto';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/** Prefixed random identifiers (`org_`, `usr_`, `key_`, `gen_`, `file_`). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(24)}`;
}
