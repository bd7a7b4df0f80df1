import type { ChildProcess } from 'node:child_process';
import { Client } from 'pg';
import { migrate } from '../shared/db/migrate';

/** The first line a child process prints (the fake provider's URL, a load run's JSON result). */
export function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl).trim());
    });
    child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
  });
}

/** Waits until a gateway at `url` answers /readyz (every 200 ms, for up to `ms`). */
export async function waitReady(url: string, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`gateway ${url} not ready`);
}

/** Drops and recreates the database of `url`, then migrates it: every bench run starts from an empty schema. */
export async function resetDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = u.pathname.slice(1);
  u.pathname = '/postgres';
  const admin = new Client({ connectionString: u.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  await migrate(url);
}
