import fs from 'node:fs';
import path from 'node:path';
import { createTestDb, type TestDb } from '../../helpers/test-db';

/**
 * prisma/schema.prisma mirrors the migrations (which are the database's source of truth). Partial indexes are
 * declared there with `where: raw(...)` (preview feature `partialIndexes`); this test holds the declarations and
 * the migrated database to each other, so neither drifts: every partial index the schema declares exists with
 * the same columns, order and predicate, and the database has no partial index the schema does not declare.
 */
const schema = fs.readFileSync(path.join(__dirname, '../../../prisma/schema.prisma'), 'utf8');

function model(name: string): { table: string; columns: Map<string, string>; body: string } {
  const m = new RegExp(`^model ${name} \\{([\\s\\S]*?)^\\}`, 'm').exec(schema);
  if (!m) throw new Error(`model ${name} not found in schema.prisma`);
  const body = m[1];
  const columns = new Map<string, string>();
  for (const line of body.split('\n')) {
    const field = /^\s+(\w+)\s+\w/.exec(line)?.[1];
    if (field) columns.set(field, /@map\("([^"]+)"\)/.exec(line)?.[1] ?? field);
  }
  const table = /@@map\("([^"]+)"\)/.exec(body)?.[1] ?? name;
  return { table, columns, body };
}

/** `CREATE INDEX ...` as PostgreSQL's pg_indexes prints it, for every `@@index(..., where: raw(...))`. */
function declaredPartialIndexes(name: string): Map<string, string> {
  const { table, columns, body } = model(name);
  const out = new Map<string, string>();
  for (const m of body.matchAll(/@@index\(\[([^\]]+)\],\s*map:\s*"([^"]+)",\s*where:\s*raw\("([^"]+)"\)\)/g)) {
    const cols = m[1].split(',').map((c) => {
      const [, field, desc] = /^\s*(\w+)(\(sort: Desc\))?\s*$/.exec(c)!;
      const column = columns.get(field);
      if (!column) throw new Error(`${m[2]}: field ${field} is not in model ${name}`);
      return `${column}${desc ? ' DESC' : ''}`;
    });
    out.set(m[2], `CREATE INDEX ${m[2]} ON public.${table} USING btree (${cols.join(', ')}) WHERE (${m[3]})`);
  }
  return out;
}

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => {
  await t?.drop();
});

describe('schema.prisma declares the partial indexes the migrations create', () => {
  it('generations: the key-less history indexes', async () => {
    const declared = declaredPartialIndexes('Generation');
    expect([...declared.keys()].filter((n) => n.startsWith('generations_keyless_'))).toHaveLength(6);
    expect(declared.has('generations_unended_created_at_idx')).toBe(true);
    const rows = await t.db.$queryRawUnsafe<Array<{ indexname: string; indexdef: string }>>(
      `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'generations' AND indexdef LIKE '% WHERE %' ORDER BY indexname`,
    );
    // A partitioned table's own index prints `ON ONLY` (its partitions' indexes are attached to it).
    const actual = new Map(rows.map((r) => [r.indexname, r.indexdef.replace(' ON ONLY public.', ' ON public.')]));
    expect(actual).toEqual(declared);
  });

  it('no other table has a partial index the schema leaves out', async () => {
    const rows = await t.db.$queryRawUnsafe<Array<{ tablename: string; indexname: string }>>(
      // A month partition's indexes are its table's, created by PostgreSQL for each partition.
      `SELECT tablename, indexname FROM pg_indexes i JOIN pg_class c ON c.relname = i.tablename AND NOT c.relispartition
        WHERE schemaname = 'public' AND indexdef LIKE '% WHERE %' AND tablename <> 'generations' AND tablename <> '_prisma_migrations'`,
    );
    const undeclared = rows.filter((r) => !schema.includes(`map: "${r.indexname}"`));
    expect(undeclared).toEqual([]);
  });
});
