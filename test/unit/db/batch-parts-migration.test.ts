/**
 * The batch_parts migration moves what batches wrote before it: the parts of the files of ended batches (from
 * batch_files.parts) and those of batches not ended (from batches.output_parts / error_parts), in order, numbered
 * below any later commit's version; a file a batch wrote names the batch and its kind.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { randomBytes } from 'node:crypto';
import { TEST_PG_URL, databaseUrl } from '../../helpers/test-env';

const DIR = path.resolve(__dirname, '../../../prisma/migrations');
const MIGRATION = '20261201100000_batch_parts';
const name = `sy_t_mig_${randomBytes(6).toString('hex')}`;
let admin: Client;
let c: Client;

beforeAll(async () => {
  admin = new Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  c = new Client({ connectionString: databaseUrl(name) });
  await c.connect();
  for (const m of fs.readdirSync(DIR).filter((n) => fs.existsSync(path.join(DIR, n, 'migration.sql'))).sort()) {
    if (m >= MIGRATION) break;
    await c.query(fs.readFileSync(path.join(DIR, m, 'migration.sql'), 'utf8'));
  }
});
afterAll(async () => {
  await c?.end();
  await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.end();
});

it('moves the parts of finished files and of running batches to batch_parts, in order', async () => {
  await c.query(`INSERT INTO organizations (id, name, callback_secret) VALUES ('org', 'o', 's')`);
  const batch = (id: string, status: string, out: string[], err: string[], files: { o?: string; e?: string } = {}, version = 10) =>
    c.query(
      `INSERT INTO batches (id, organization_id, principal, endpoint, input_file_id, completion_window, status, expires_at, output_parts, error_parts, output_file_id, error_file_id, version)
       VALUES ($1, 'org', '{}', '/v1/chat/completions', 'file-in', '24h', $2, now(), $3, $4, $5, $6, $7)`,
      [id, status, JSON.stringify(out), JSON.stringify(err), files.o ?? null, files.e ?? null, version],
    );
  const file = (id: string, parts: string[] | null) =>
    c.query(`INSERT INTO batch_files (id, organization_id, purpose, filename, bytes, lines, storage_key, parts) VALUES ($1, 'org', $2, 'f', 10, 2, $3, $4)`, [id, parts ? 'batch_output' : 'batch', parts?.[0] ?? id, parts ? JSON.stringify(parts) : null]);
  await file('file-in', null);
  // Ended, with its two files; its output file deleted since (its parts are not moved).
  await file('file-o1', ['b1_o_1', 'b1_o_3', 'b1_o_4']);
  await file('file-e1', ['b1_e_2']);
  await batch('b1', 'completed', ['b1_o_1', 'b1_o_3', 'b1_o_4'], ['b1_e_2'], { o: 'file-o1', e: 'file-e1' });
  await batch('b2', 'cancelled', ['b2_o_1'], [], { o: 'file-gone' });
  // Running: its lists are its parts so far.
  await batch('b3', 'in_progress', ['b3_o_0', 'b3_o_5'], ['b3_e_2'], {}, 7);

  await c.query(fs.readFileSync(path.join(DIR, MIGRATION, 'migration.sql'), 'utf8'));

  const parts = (await c.query(`SELECT batch_id, kind, seq, storage_key, bytes FROM batch_parts ORDER BY batch_id, kind, seq`)).rows;
  expect(parts).toEqual([
    { batch_id: 'b1', kind: 'error', seq: 0, storage_key: 'b1_e_2', bytes: null },
    { batch_id: 'b1', kind: 'output', seq: 0, storage_key: 'b1_o_1', bytes: null },
    { batch_id: 'b1', kind: 'output', seq: 1, storage_key: 'b1_o_3', bytes: null },
    { batch_id: 'b1', kind: 'output', seq: 2, storage_key: 'b1_o_4', bytes: null },
    { batch_id: 'b3', kind: 'error', seq: 0, storage_key: 'b3_e_2', bytes: null },
    { batch_id: 'b3', kind: 'output', seq: 0, storage_key: 'b3_o_0', bytes: null },
    { batch_id: 'b3', kind: 'output', seq: 1, storage_key: 'b3_o_5', bytes: null },
  ]);
  const files = (await c.query(`SELECT id, batch_id, kind FROM batch_files ORDER BY id`)).rows;
  expect(files).toEqual([
    { id: 'file-e1', batch_id: 'b1', kind: 'error' },
    { id: 'file-in', batch_id: null, kind: null },
    { id: 'file-o1', batch_id: 'b1', kind: 'output' },
  ]);
  const columns = (await c.query(`SELECT table_name, column_name FROM information_schema.columns WHERE (table_name = 'batches' AND column_name LIKE '%_parts') OR (table_name = 'batch_files' AND column_name = 'parts')`)).rows;
  expect(columns).toEqual([]);
  // A later commit of the running batch (version 7) numbers its part above the moved ones.
  await c.query(`INSERT INTO batch_parts (batch_id, kind, seq, storage_key, bytes, lines) VALUES ('b3', 'output', 7, 'b3_o_7', 10, 1)`);
});
