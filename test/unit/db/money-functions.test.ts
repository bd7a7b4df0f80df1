import fs from 'node:fs';
import path from 'node:path';
import { createTestDb, type TestDb } from '../../helpers/test-db';

/**
 * One path for money: every SQL function of the migrated database (`sy_*`) is reached from production (api/,
 * workers/, shared/, bin/), directly or through another reached function. A function only tests or benchmarks call
 * is a second path nobody runs in production: drop it in a migration (e.g. drop_dead_money_functions). A function a
 * trigger runs (the activity totals': prisma/migrations/20261205100000_activity_totals) is reached by every write it fires on.
 */
const ROOT = path.join(__dirname, '../../..');
const CALL = /\b(sy_[a-z_]+)\s*\(/g;

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'generated' || e.name === 'node_modules' ? [] : sources(p);
    return /\.(ts|js)$/.test(e.name) ? [p] : [];
  });
}

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(() => t.drop());

it('every sy_ function is reached from production code, directly or through another reached function', async () => {
  const rows = (await t.pool.query(`SELECT proname, prosrc FROM pg_proc WHERE proname LIKE 'sy\\_%' AND pronamespace = 'public'::regnamespace`)).rows as Array<{
    proname: string;
    prosrc: string;
  }>;
  const calls = new Map<string, Set<string>>();
  for (const r of rows) {
    const set = calls.get(r.proname) ?? new Set<string>();
    for (const m of r.prosrc.matchAll(CALL)) if (m[1] !== r.proname) set.add(m[1]);
    calls.set(r.proname, set);
  }
  const reached = new Set<string>();
  const visit = (name: string) => {
    if (reached.has(name) || !calls.has(name)) return;
    reached.add(name);
    for (const next of calls.get(name)!) visit(next);
  };
  const triggered = (await t.pool.query(`SELECT DISTINCT p.proname FROM pg_trigger tg JOIN pg_proc p ON p.oid = tg.tgfoid WHERE NOT tg.tgisinternal`)).rows as Array<{ proname: string }>;
  for (const r of triggered) visit(r.proname);
  for (const dir of ['api', 'workers', 'shared', 'bin']) {
    for (const file of sources(path.join(ROOT, dir))) for (const m of fs.readFileSync(file, 'utf8').matchAll(CALL)) visit(m[1]);
  }
  expect(reached.has('sy_ledger_group')).toBe(true);
  expect([...calls.keys()].filter((n) => !reached.has(n)).sort()).toEqual([]);
});
