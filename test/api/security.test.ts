import request from 'supertest';
import { Ledger } from '../../shared/billing/ledger';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg } from '../helpers/fixtures';

/** Issue 10 (items 5, 6, 10, 11) and 9.9: each test performs the attack or the report that failed. */
let h: TestApp;
let org: Awaited<ReturnType<typeof seedOrg>>;

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0 } });
  org = await seedOrg(h.t.db, { balance: '100' });
});
afterAll(() => h.close());

const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });

describe('limit_remaining of `never` limits (10.5)', () => {
  it('a key and a member with limit 4.2 never, after spending 4.2, report 0 remaining in /v1/key, /v2/balance and /v1/balance', async () => {
    const member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'never@example.com', role: 'member', limit: '4.2', reset: 'never' });
    const k = await seedKey(org.accounts, org.organizationId, { userId: member.userId, limit: '4.2', reset: 'never' });
    const ledger = new Ledger(h.t.db);
    await ledger.reserve({ generationId: 'gen_never_1', organizationId: org.organizationId, apiKeyId: k.id, userId: member.userId, amount: '4.2' });
    await ledger.charge('gen_never_1', '4.2');

    const info = await request(h.app).get('/v1/key').set(bearer(k.key));
    expect(info.body).toMatchObject({ limit: 4.2, limit_remaining: 0, limit_reset: 'never', usage: 4.2 });
    const v2 = await request(h.app).get('/v2/balance').set(bearer(k.key));
    expect(v2.body.key).toEqual({ limit: '4.200000', limitRemaining: '0.000000', limitReset: 'never' });
    expect(v2.body.member).toEqual({ limit: '4.200000', limitRemaining: '0.000000', limitReset: 'never' });
    expect(v2.body.available).toBe('0.000000');
    const v1 = await request(h.app).get('/v1/balance').set(bearer(k.key));
    expect(v1.body.amount).toBe('0.000000');
    const listed = (await request(h.app).get('/v1/keys').set(bearer(org.ownerToken))).body.data.find((x: { id: string }) => x.id === k.id);
    expect(listed.limit_remaining).toBe(0);
  });

  it('a part-spent never limit reports the rest', async () => {
    const k = await seedKey(org.accounts, org.organizationId, { limit: '4.2', reset: 'never' });
    const ledger = new Ledger(h.t.db);
    await ledger.reserve({ generationId: 'gen_never_2', organizationId: org.organizationId, apiKeyId: k.id, amount: '2' });
    await ledger.charge('gen_never_2', '1.2');
    expect((await request(h.app).get('/v1/key').set(bearer(k.key))).body.limit_remaining).toBe(3);
  });
});
