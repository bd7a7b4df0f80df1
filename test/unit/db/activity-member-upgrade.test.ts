import type { Client } from 'pg';
import { migrate } from '../../../shared/db/migrate';
import { createDbBefore } from '../../helpers/test-db';

/**
 * The upgrade to members' activity totals: a database holding activity_totals (generations that ended under the older
 * trigger) gets activity_member_totals filled from them, by member, without the user-less ones; settlements after it
 * add to them as to the other two.
 */
const MEMBER_TOTALS = '20261208000000_activity_member_totals';
let url: string;
let c: Client;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ url, c, drop } = await createDbBefore(MEMBER_TOTALS, 'sy_t_amt_'));
});
afterAll(() => drop());

/** Generations `from`..`to` recorded pending, then ended by one UPDATE, as the ledger's close ends them. */
async function settle(from: number, to: number): Promise<void> {
  await c.query(`
    INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id, model_display_name, request_type, api_type,
                             response_mode, status, created_at)
    SELECT 'gen_' || n, 'org_a', CASE WHEN n % 3 = 0 THEN NULL ELSE 'key_' || (n % 5) END, CASE WHEN n % 7 = 0 THEN NULL ELSE 'usr_' || (n % 2) END,
           'm' || (n % 2), 'm', 'M', 'text', 'chat', 'sync', 'pending', now() - (n % 4) * interval '1 day'
      FROM generate_series($1::int, $2::int) n`, [from, to]);
  await c.query(`
    UPDATE generations SET status = CASE WHEN id LIKE '%1' THEN 'failed' ELSE 'completed' END::"GenerationStatus",
           client_cost = CASE WHEN id LIKE '%1' THEN 0 ELSE 0.0100000003 END, provider = 'p', final_endpoint_slug = model || '@p',
           usage = '{"inputTokens": 3, "outputTokens": 2}'
     WHERE id = ANY (SELECT 'gen_' || n FROM generate_series($1::int, $2::int) n)`, [from, to]);
}

const byMember = `SELECT organization_id, day, model, provider, endpoint, user_id, SUM(usage) AS usage, SUM(requests) AS requests,
    SUM(prompt_tokens) AS p, SUM(completion_tokens) AS c, SUM(reasoning_tokens) AS r, SUM(cached_tokens) AS k
    FROM activity_totals WHERE user_id <> '' GROUP BY 1, 2, 3, 4, 5, 6`;
const own = `SELECT organization_id, day, model, provider, endpoint, user_id, usage, requests, prompt_tokens, completion_tokens,
    reasoning_tokens, cached_tokens FROM activity_member_totals`;

it('fills activity_member_totals from activity_totals, and the trigger adds to them after', async () => {
  await c.query(`INSERT INTO organizations (id, name, callback_secret) VALUES ('org_a', 'A', 's')`);
  await settle(1, 200);
  expect((await c.query(`SELECT SUM(requests)::int AS n FROM activity_totals`)).rows[0].n).toBe(200);

  expect(await migrate(url, () => {}, { before: '20261209000000_model_names_once' })).toEqual([MEMBER_TOTALS]);
  const filled = (await c.query(`SELECT SUM(requests)::int AS n FROM activity_member_totals`)).rows[0];
  // The generations with a user: all but every seventh.
  expect(filled.n).toBe(200 - Math.floor(200 / 7));
  expect((await c.query(`(${byMember}) EXCEPT (${own})`)).rows).toEqual([]);
  expect((await c.query(`(${own}) EXCEPT (${byMember})`)).rows).toEqual([]);

  await settle(201, 300);
  expect((await c.query(`SELECT SUM(requests)::int AS n FROM activity_member_totals`)).rows[0].n).toBe(300 - Math.floor(300 / 7));
  // A generation recorded already ended (the per-row trigger), with a user and without.
  await c.query(`
    INSERT INTO generations (id, organization_id, user_id, model, unified_model_id, model_display_name, request_type, api_type,
                             response_mode, status, client_cost, provider, final_endpoint_slug)
    VALUES ('gen_x1', 'org_a', 'usr_1', 'm1', 'm', 'M', 'text', 'chat', 'sync', 'completed', 0.25, 'p', 'm1@p'),
           ('gen_x2', 'org_a', NULL, 'm1', 'm', 'M', 'text', 'chat', 'sync', 'completed', 0.5, 'p', 'm1@p')`);
  expect((await c.query(`SELECT SUM(requests)::int AS n FROM activity_member_totals`)).rows[0].n).toBe(300 - Math.floor(300 / 7) + 1);
  expect((await c.query(`(${byMember}) EXCEPT (${own})`)).rows).toEqual([]);
  expect((await c.query(`(${own}) EXCEPT (${byMember})`)).rows).toEqual([]);
  const org = (await c.query(`SELECT (SELECT SUM(usage) FROM activity_org_totals)::text AS o, (SELECT SUM(usage) FROM activity_totals)::text AS t`)).rows[0];
  expect(org.o).toBe(org.t);
});
