import type { Client } from 'pg';
import { migrate } from '../../../shared/db/migrate';
import { createDbBefore } from '../../helpers/test-db';

/**
 * The upgrade: a database an older release left, holding generations and ledger entries over several months, is
 * migrated to monthly partitions with every row in its month, the same ids, keys and indexes, and the ledger's ids
 * continuing from where they were.
 */
const PARTITIONING = '20261204000000_history_partitions';
const CONTENTS = '20261204100000_generation_contents';
let url: string;
let c: Client;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ url, c, drop } = await createDbBefore(PARTITIONING, 'sy_t_up_'));
});
afterAll(() => drop());

it('partitions a populated generations and ledger_entries table', async () => {
  expect((await c.query(`SELECT relkind FROM pg_class WHERE relname = 'generations'`)).rows[0].relkind).toBe('r');
  await c.query(`INSERT INTO organizations (id, name, callback_secret) VALUES ('org_a', 'A', 's')`);
  // 3,000 generations over August to October 2026 and one in 2001, each with a reserve and a charge entry.
  await c.query(`
    INSERT INTO generations (id, organization_id, api_key_id, model, unified_model_id, model_display_name, request_type, api_type,
                             response_mode, status, client_cost, request, result, created_at, completed_at)
    SELECT 'gen_old' || n, 'org_a', CASE WHEN n % 2 = 0 THEN 'key_a' END, 'm', 'm', 'M', 'text', 'chat', 'sync', 'completed', 0.5,
           '{"q":1}', '{"a":1}', at, at
      FROM (SELECT n, timestamptz '2026-08-01' + (n * interval '43 minutes') AS at FROM generate_series(1, 3000) n
            UNION ALL SELECT 0, timestamptz '2001-01-01') s`);
  await c.query(`
    INSERT INTO ledger_entries (organization_id, generation_id, kind, amount, reserved_delta, created_at)
    SELECT organization_id, id, k::"LedgerKind", CASE WHEN k = 'charge' THEN -0.5 ELSE 0 END, 0, created_at
      FROM generations, unnest(ARRAY['reserve', 'charge']) k`);
  const before = (await c.query(`SELECT count(*)::int AS n, max(id)::bigint AS top, sum(amount)::text AS total FROM ledger_entries`)).rows[0];
  const gens = (await c.query(`SELECT md5(string_agg(id || created_at::text || client_cost::text || request::text, ',' ORDER BY id)) AS h FROM generations`)).rows[0].h;

  expect(await migrate(url, () => {}, { before: CONTENTS })).toContain(PARTITIONING);

  expect((await c.query(`SELECT relkind FROM pg_class WHERE relname = 'generations'`)).rows[0].relkind).toBe('p');
  expect((await c.query(`SELECT md5(string_agg(id || created_at::text || client_cost::text || request::text, ',' ORDER BY id)) AS h FROM generations`)).rows[0].h).toBe(gens);
  const where = (await c.query(`SELECT tableoid::regclass::text AS p, count(*)::int AS n FROM generations GROUP BY 1 ORDER BY 1`)).rows;
  expect(where).toEqual([
    { p: 'generations_p200101', n: 1 },
    { p: 'generations_p202608', n: expect.any(Number) },
    { p: 'generations_p202609', n: expect.any(Number) },
    { p: 'generations_p202610', n: expect.any(Number) },
  ]);
  expect(where.reduce((s: number, r: { n: number }) => s + r.n, 0)).toBe(3001);
  const after = (await c.query(`SELECT count(*)::int AS n, max(id)::bigint AS top, sum(amount)::text AS total FROM ledger_entries`)).rows[0];
  expect(after).toEqual(before);
  // The sequence goes on from the old ids, now owned by the partitioned table.
  const next = (await c.query(`INSERT INTO ledger_entries (organization_id, kind, amount) VALUES ('org_a', 'topup', 1) RETURNING id::bigint AS id`)).rows[0].id;
  expect(BigInt(next)).toBeGreaterThan(BigInt(before.top));
  // Every month has the table's indexes (its key holds created_at).
  const idx = (await c.query(`SELECT count(*)::int AS n FROM pg_indexes WHERE tablename = 'generations_p202609'`)).rows[0].n;
  const parent = (await c.query(`SELECT count(*)::int AS n FROM pg_indexes WHERE tablename = 'generations'`)).rows[0].n;
  expect(idx).toBe(parent);
  expect((await c.query(`SELECT pg_get_constraintdef(oid) AS d FROM pg_constraint WHERE conname = 'generations_pkey'`)).rows[0].d).toBe('PRIMARY KEY (id, created_at)');
  expect((await c.query(`SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE '%_unpartitioned'`)).rows[0].n).toBe(0);
});

it('moves the last 31 days of content out of the rows and erases older content', async () => {
  await c.query(`
    INSERT INTO generations (id, organization_id, model, unified_model_id, model_display_name, request_type, api_type,
                             response_mode, status, request, result, created_at)
    VALUES ('gen_recent', 'org_a', 'm', 'm', 'M', 'text', 'chat', 'sync', 'completed', '{"q":"recent"}', '{"a":"recent"}', now() - interval '2 days'),
           ('gen_image', 'org_a', 'm', 'm', 'M', 'image', 'images', 'sync', 'completed', '{"q":"a cat"}', '{"outputs":[1]}', now() - interval '2 days')`);
  expect((await migrate(url))[0]).toBe(CONTENTS);
  // No row keeps a request; an image keeps its answer (its stored files), text answers moved or erased.
  const rows = (await c.query(`SELECT id, request, result FROM generations WHERE request IS NOT NULL OR result IS NOT NULL ORDER BY id`)).rows;
  expect(rows).toEqual([{ id: 'gen_image', request: null, result: { outputs: [1] } }]);
  const moved = (await c.query(`SELECT generation_id AS id, request, result FROM generation_contents WHERE generation_id IN ('gen_recent', 'gen_image') ORDER BY 1`)).rows;
  expect(moved).toEqual([
    { id: 'gen_image', request: { q: 'a cat' }, result: null },
    { id: 'gen_recent', request: { q: 'recent' }, result: { a: 'recent' } },
  ]);
  // The 3,000 earlier ones: only those of the last 31 days have content left.
  const kept = (await c.query(`SELECT count(*)::int AS n, bool_and(g.created_at >= now() - interval '31 days') AS recent
    FROM generation_contents c JOIN generations g ON g.id = c.generation_id AND g.created_at = c.created_at WHERE g.id LIKE 'gen_old%'`)).rows[0];
  expect(kept.recent ?? true).toBe(true);
});
