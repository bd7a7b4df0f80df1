import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/env';

/** Where the generated secret lives: `<homeDir>/secret` (./.switchyard/secret by default). */
export function secretFile(config: Pick<Config, 'homeDir'>): string {
  return path.join(config.homeDir, 'secret');
}

/**
 * The secret that signs personal-account tokens (decisions.md section 1): SWITCHYARD_SECRET when set, else
 * the one in `<homeDir>/secret`, generated (32 random bytes, hex, mode 0600) on first use. The service and
 * the CLI call this, so tokens printed by the CLI verify in the service.
 */
export function resolveSecret(config: Pick<Config, 'secret' | 'homeDir'>): string {
  if (config.secret) return config.secret;
  const file = secretFile(config);
  const existing = readSecret(file);
  if (existing) return existing;
  fs.mkdirSync(config.homeDir, { recursive: true });
  const secret = randomBytes(32).toString('hex');
  // Written whole under a name of its own, then linked into place: if processes generate at once (replicas sharing a
  // volume), the first link wins and the others read a complete file, never one still being written.
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    fs.writeFileSync(draft, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    fs.linkSync(draft, file);
    return secret;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`cannot write ${file}: ${(e as Error).message}`);
    const other = readSecret(file);
    if (!other) throw new Error(`${file} is empty: delete it (a new secret is generated) or set SWITCHYARD_SECRET`);
    return other;
  } finally {
    fs.rmSync(draft, { force: true });
  }
}

function readSecret(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim() || undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read ${file}: ${(e as Error).message}`);
  }
}
