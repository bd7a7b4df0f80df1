import fs from 'node:fs';
import path from 'node:path';
import { isAlive, writePrivateFile } from './process-utils';

/**
 * `<homeDir>/runtime.json`, written by a running service: how to reach the database and Redis it uses
 * (URLs carry the embedded services' passwords, hence mode 0600). The CLI reads it to work on the same
 * database when DATABASE_URL is not set.
 */
export interface RuntimeInfo {
  pid: number;
  startedAt: string;
  databaseUrl: string;
  redisUrl: string;
  embedded: { postgres: boolean; redis: boolean };
}

export function runtimeFile(homeDir: string): string {
  return path.join(homeDir, 'runtime.json');
}

export function writeRuntimeInfo(homeDir: string, info: RuntimeInfo): void {
  fs.mkdirSync(homeDir, { recursive: true });
  writePrivateFile(runtimeFile(homeDir), `${JSON.stringify(info, null, 2)}\n`);
}

/** The runtime info of a live service, or null (absent, unreadable, or written by a process now gone). */
export function readRuntimeInfo(homeDir: string): RuntimeInfo | null {
  try {
    const info = JSON.parse(fs.readFileSync(runtimeFile(homeDir), 'utf8')) as RuntimeInfo;
    return info && typeof info.databaseUrl === 'string' && isAlive(info.pid) ? info : null;
  } catch {
    return null;
  }
}

/** Removes runtime.json if this process wrote it. */
export function removeRuntimeInfo(homeDir: string): void {
  try {
    const info = JSON.parse(fs.readFileSync(runtimeFile(homeDir), 'utf8')) as RuntimeInfo;
    if (info.pid === process.pid) fs.rmSync(runtimeFile(homeDir), { force: true });
  } catch {
    // nothing to remove
  }
}
