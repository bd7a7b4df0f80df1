import { createTestDb, type TestDb } from '../../helpers/test-db';
import { seedOrg } from '../../helpers/fixtures';
import { Ledger } from '../../../shared/billing/ledger';
import { HistoryPartitions } from '../../../shared/db/partitions';
import { generationById, withContent } from '../../../shared/db/generation-reads';
import { HistoryService } from '../../../shared/services/history.service';
import { StoredResponses } from '../../../api/services/stored-responses';
import { newId } from '../../../shared/ids';
import type { Principal } from '../../../shared/auth/principal';

/**
 * Customer content out of the hot row (prisma/migrations/20261204100000_generation_contents): the ledger's writes are
 * unchanged, a trigger moves a request and an answer into generation_contents (by day); readers get them back; once
 * CONTENT_RETENTION_DAYS drop their day, a stored response and previous_response_id answer 404 saying so, and the
 * history record stays.
 */
let t: TestDb;
let org: { organizationId: string; ownerUserId: string };
let ledger: Ledger;
beforeAll(async () => {
  t = await createTestDb();
  org = await seedOrg(t.db, { balance: '100' });
  ledger = new Ledger(t.db, () => new Date(), { pool: t.pool });
});
afterAll(() => t.drop());

const REQUEST = { body: { model: 'm', input: 'a private question' }, input: [{ type: 'message', role: 'user', content: 'a private question' }] };
const RESULT = { model: 'm', cost: '0.1', result: { output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'a private answer' }] }], usage: { inputTokens: 3, outputTokens: 3 }, serviceTier: 'default' } };

async function respond(apiType = 'responses'): Promise<string> {
  const id = apiType === 'responses' ? `resp_${newId('x').slice(2)}` : newId('gen');
  const opened = await ledger.open({
    id, organization_id: org.organizationId, api_key_id: null, user_id: org.ownerUserId, bound: '1', minimum: '1', model: 'm', unified_model_id: 'm',
    request_type: apiType === 'images' ? 'image' : 'chat', api_type: apiType, response_mode: 'sync', request: REQUEST,
  });
  expect('granted' in opened).toBe(true);
  const closed = await ledger.close({ id, status: 'completed', cost: '0.1', result: apiType === 'images' ? { outputs: [{ url: 'x' }] } : RESULT });
  expect(closed.applied).toBe(true);
  return id;
}
const owner: Principal = { kind: 'user', organizationId: '', userId: '', role: 'owner' } as unknown as Principal;

describe('content out of the hot row', () => {
  it('the record keeps no request nor text answer; readers get them from generation_contents', async () => {
    const id = await respond();
    const raw = await t.db.generation.findFirstOrThrow({ where: { id } });
    expect([raw.request, raw.result]).toEqual([null, null]);
    const g = await generationById(t.db, id, (where) => t.db.generation.findFirst({ where }));
    expect(g?.request).toEqual(REQUEST);
    expect(g?.result).toEqual(RESULT);
    expect((await withContent(t.db, [raw]))[0].result).toEqual(RESULT);
    const part = (await t.pool.query(`SELECT tableoid::regclass::text AS p FROM generation_contents WHERE generation_id = $1`, [id])).rows[0].p;
    expect(part).toMatch(/^generation_contents_d\d{8}$/);
    // An image's answer (its stored files) stays with its record; its prompt moves.
    const image = await respond('images');
    const img = await t.db.generation.findFirstOrThrow({ where: { id: image } });
    expect(img.request).toBeNull();
    expect(img.result).toEqual({ outputs: [{ url: 'x' }] });
  });

  it('past CONTENT_RETENTION_DAYS the day is dropped: a stored response is 404 saying so, the history record stays', async () => {
    const id = await respond();
    const principal = { ...owner, organizationId: org.organizationId, userId: org.ownerUserId } as Principal;
    const stored = new StoredResponses(t.db);
    expect((await stored.get(principal, id)).id).toBe(id);
    // 31 days later, with CONTENT_RETENTION_DAYS 30 (history kept 400).
    const later = new Date(Date.now() + 31 * 86_400_000);
    const retired = await new HistoryPartitions(t.db, () => later, { retentionDays: 400, contentRetentionDays: 30 }).retire();
    expect(retired.some((n) => n.startsWith('generation_contents_d'))).toBe(true);
    expect(retired.some((n) => n.startsWith('generations_'))).toBe(false);
    const g = await generationById(t.db, id, (where) => t.db.generation.findFirst({ where }));
    expect([g?.request, g?.result, g?.status]).toEqual([null, null, 'completed']);
    await expect(stored.get(principal, id)).rejects.toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('erased after the content retention period') });
    await expect(stored.history(principal, id)).rejects.toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('Previous response') });
    const detail = await new HistoryService(t.db).get({ kind: 'user', organizationId: org.organizationId, userId: org.ownerUserId, role: 'owner' }, id);
    expect(detail).toMatchObject({ id, clientCost: '0.100000', status: 'completed', serviceTier: null });
  });
});
