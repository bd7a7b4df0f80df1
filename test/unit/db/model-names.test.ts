import { createTestDb, type TestDb } from '../../helpers/test-db';
import { seedOrg } from '../../helpers/fixtures';
import { Ledger } from '../../../shared/billing/ledger';
import { askedModel } from '../../../shared/db/generation-reads';
import { newId } from '../../../shared/ids';

/**
 * A generation's model names, each stored once (prisma/migrations/20261209000000_model_names_once): the money body
 * stores `unified_model_id` (the model asked for) null while it is the same as `model` (the model the record shows),
 * and keeps it once a close names another model (a fallback's). `askedModel` reads it back either way.
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

async function generation(asked: { model: string; unified: string }, servedBy?: string) {
  const id = newId('gen');
  const opened = await ledger.open({
    id, organization_id: org.organizationId, api_key_id: null, user_id: org.ownerUserId, bound: '1', minimum: '1',
    model: asked.model, unified_model_id: asked.unified, request_type: 'chat', api_type: 'responses', response_mode: 'sync', request: {},
  });
  expect('granted' in opened).toBe(true);
  const stored = await t.db.generation.findFirstOrThrow({ where: { id } });
  if (servedBy !== undefined) expect((await ledger.close({ id, status: 'completed', cost: '0.1', model: servedBy })).applied).toBe(true);
  const ended = await t.db.generation.findFirstOrThrow({ where: { id } });
  return { opened: { model: stored.model, unifiedModelId: stored.unifiedModelId }, ended: { model: ended.model, unifiedModelId: ended.unifiedModelId, asked: askedModel(ended) } };
}

describe('model names stored once', () => {
  it('the model asked for is not stored again when it is the model the record shows', async () => {
    const g = await generation({ model: 'openai/gpt-4.1-mini', unified: 'openai/gpt-4.1-mini' }, 'openai/gpt-4.1-mini');
    expect(g.opened).toEqual({ model: 'openai/gpt-4.1-mini', unifiedModelId: null });
    expect(g.ended).toEqual({ model: 'openai/gpt-4.1-mini', unifiedModelId: null, asked: 'openai/gpt-4.1-mini' });
  });

  it('a fallback to another model keeps the model asked for', async () => {
    const g = await generation({ model: 'openai/gpt-4.1-mini', unified: 'openai/gpt-4.1-mini' }, 'anthropic/claude-sonnet-4');
    expect(g.ended).toEqual({ model: 'anthropic/claude-sonnet-4', unifiedModelId: 'openai/gpt-4.1-mini', asked: 'openai/gpt-4.1-mini' });
  });

  it('a name other than the catalog id (a bare id, an inline spec) keeps both from the start', async () => {
    const g = await generation({ model: 'gpt-4.1-mini', unified: 'openai/gpt-4.1-mini' }, 'openai/gpt-4.1-mini');
    expect(g.opened).toEqual({ model: 'gpt-4.1-mini', unifiedModelId: 'openai/gpt-4.1-mini' });
    expect(g.ended).toEqual({ model: 'openai/gpt-4.1-mini', unifiedModelId: 'openai/gpt-4.1-mini', asked: 'openai/gpt-4.1-mini' });
  });

  it('a request granted from a lease is recorded alike (sy_ledger_drawn)', async () => {
    const lease = newId('lease');
    const taken = await ledger.takeLease({ id: lease, organizationId: org.organizationId, apiKeyId: null, userId: org.ownerUserId, amount: '2', headroom: '2', expiresAt: new Date(Date.now() + 60_000) });
    expect('granted' in taken).toBe(true);
    const id = newId('gen');
    await ledger.openDrawn({
      id, lease, organization_id: org.organizationId, api_key_id: null, user_id: org.ownerUserId, bound: '1', minimum: '1', model: 'openai/gpt-4.1-mini',
      unified_model_id: 'openai/gpt-4.1-mini', request_type: 'chat', api_type: 'responses', response_mode: 'sync', request: {},
    });
    const g = await t.db.generation.findFirstOrThrow({ where: { id } });
    expect({ model: g.model, unifiedModelId: g.unifiedModelId }).toEqual({ model: 'openai/gpt-4.1-mini', unifiedModelId: null });
  });

  it('a close that names no model changes neither', async () => {
    const id = newId('gen');
    await ledger.open({
      id, organization_id: org.organizationId, api_key_id: null, user_id: org.ownerUserId, bound: '1', minimum: '1',
      model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'responses', response_mode: 'sync', request: {},
    });
    expect((await ledger.close({ id, status: 'failed' })).applied).toBe(true);
    const g = await t.db.generation.findFirstOrThrow({ where: { id } });
    expect({ model: g.model, unifiedModelId: g.unifiedModelId, status: g.status }).toEqual({ model: 'm', unifiedModelId: null, status: 'failed' });
  });
});
