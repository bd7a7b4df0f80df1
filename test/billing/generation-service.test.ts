import { AppError } from '../../shared/errors/app-error';
import { Ledger, closeRowOf, type Finish } from '../../shared/billing/ledger';
import { money } from '../../shared/money';
import { GenerationService, type NewGeneration } from '../../shared/services/generation.service';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { seedKey, seedOrg } from '../helpers/fixtures';

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(() => t.drop());

let n = 0;
const gen = (organizationId: string, over: Partial<NewGeneration> = {}): NewGeneration => ({
  id: `gen_batch_${++n}_${Date.now()}`,
  organizationId,
  apiKeyId: null,
  userId: null,
  model: 'm',
  unifiedModelId: 'm',
  requestType: 'chat',
  apiType: 'responses',
  responseMode: 'sync',
  request: { input: 'x' },
  bound: '1',
  ...over,
});

/** A generation's close straight through the ledger (shared/billing/ending.ts endGeneration's commit). */
const finish = (l: Ledger, id: string, f: Finish) => l.close(closeRowOf(id, f));

const outcome = (p: Promise<unknown>) => p.then(() => 'ok', (e: { metadata?: { reason?: string } }) => e.metadata?.reason ?? 'error');

describe('GenerationService (batched reserve-and-record, settle-and-record)', () => {
  it('lets exactly 5 of 50 concurrent generations through when the balance fits 5, across two service instances', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '5' });
    const [la, lb] = [new Ledger(t.db), new Ledger(t.db)];
    const a = new GenerationService(t.db, undefined, la);
    const b = new GenerationService(t.db, undefined, lb); // a second process
    const gens = Array.from({ length: 50 }, () => gen(organizationId));
    const results = await Promise.all(gens.map((g, i) => outcome((i % 2 ? a : b).create(g))));
    expect(results.filter((r) => r === 'ok')).toHaveLength(5);
    expect(results.filter((r) => r === 'balance_insufficient')).toHaveLength(45);
    expect(await t.db.generation.count({ where: { organizationId } })).toBe(5);

    const created = gens.filter((_, i) => results[i] === 'ok');
    const finishes = await Promise.all(created.flatMap((g) => [finish(la, g.id, { status: 'completed', cost: '0.75' }), finish(lb, g.id, { status: 'cancelled' })]));
    // Each generation ended once: either completed and charged, or cancelled and released — never both.
    for (let i = 0; i < created.length; i++) expect([finishes[2 * i].applied, finishes[2 * i + 1].applied].filter(Boolean)).toHaveLength(1);
    const org = await t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
    const completed = await t.db.generation.count({ where: { organizationId, status: 'completed' } });
    expect(money(org.balance).toFixed(2)).toBe(money(5).minus(money('0.75').times(completed)).toFixed(2));
    expect(money(org.reserved).isZero()).toBe(true);
    const ledger = await t.db.$queryRaw<Array<{ s: string }>>`SELECT SUM(amount)::text AS s FROM ledger_entries WHERE organization_id = ${organizationId}`;
    expect(money(ledger[0].s).equals(money(org.balance))).toBe(true);
  });

  it('claims an Idempotency-Key with the reservation: 20 concurrent duplicates on two instances make one generation and reserve once', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '100' });
    const a = new GenerationService(t.db);
    const b = new GenerationService(t.db);
    const idempotency = { key: `dup-${Date.now()}`, caller: 'key_a', hash: 'h1' };
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).createOrReplay(gen(organizationId, { idempotency }))));
    const created = results.filter((r) => 'granted' in r);
    expect(created).toHaveLength(1);
    const replays = results.filter((r): r is { replayOf: string } => 'replayOf' in r);
    expect(new Set(replays.map((r) => r.replayOf)).size).toBe(1);
    expect(await t.db.generation.count({ where: { organizationId } })).toBe(1);
    const org = await t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
    expect(money(org.reserved).toFixed(2)).toBe('1.00');
    // another request under the key: 409, nothing reserved
    await expect(a.createOrReplay(gen(organizationId, { idempotency: { ...idempotency, hash: 'h2' } }))).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(money((await t.db.organization.findUniqueOrThrow({ where: { id: organizationId } })).reserved).toFixed(2)).toBe('1.00');
  });

  it('checks key limits in a batch too, and records the failure of one item without failing the others', async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '100' });
    const key = await seedKey(accounts, organizationId, { limit: '3', reset: 'daily' });
    const s = new GenerationService(t.db);
    const results = await Promise.all([
      ...Array.from({ length: 10 }, () => outcome(s.create(gen(organizationId, { apiKeyId: key.id })))),
      outcome(s.create(gen('org_missing'))),
    ]);
    expect(results.slice(0, 10).filter((r) => r === 'ok')).toHaveLength(3);
    expect(results.slice(0, 10).filter((r) => r === 'key_limit_exceeded')).toHaveLength(7);
    expect(results[10]).toBe('error');
  });

  it('keeps the stored record of a finish: status, cost, usage and timings', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '10' });
    const ledger = new Ledger(t.db);
    const s = new GenerationService(t.db, undefined, ledger);
    const g = gen(organizationId, { bound: '2' });
    expect((await s.create(g)).toFixed(2)).toBe('2.00');
    const r = await finish(ledger, g.id, { status: 'completed', cost: '1.2345678901', usage: { inputTokens: 3, outputTokens: 4 }, latencyMs: 12.7, attemptsCount: 2, provider: 'p', finalEndpointSlug: 'm:p' });
    expect(r).toMatchObject({ applied: true });
    const row = await t.db.generation.findFirstOrThrow({ where: { id: g.id } });
    expect(row).toMatchObject({ status: 'completed', latencyMs: 13, attemptsCount: 2, provider: 'p', finalEndpointSlug: 'm:p', usage: { inputTokens: 3, outputTokens: 4 } });
    expect(money(row.clientCost).toFixed(10)).toBe('1.2345678901');
    expect((await finish(ledger, g.id, { status: 'failed' })).applied).toBe(false);
  });

  it('never opens an id again once its money was settled (discarded, or ended): 503, nothing reserved or recorded; its repeat while held is still itself', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '10' });
    const ledger = new Ledger(t.db);
    const s = new GenerationService(t.db, undefined, ledger);
    const balances = async () => {
      const o = await t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
      return [money(o.balance).toFixed(2), money(o.reserved).toFixed(2)];
    };
    // Held: the open's repeat answers its own reservation (a step re-run's replay).
    const held = gen(organizationId, { bound: '2', responseMode: 'batch' });
    expect((await s.create(held)).toFixed(2)).toBe('2.00');
    expect((await s.create(held)).toFixed(2)).toBe('2.00');
    expect(await balances()).toEqual(['10.00', '2.00']);

    // Discarded (its job could not be enqueued), then opened again with the same id: refused, nothing written.
    const discarded = gen(organizationId, { bound: '2', responseMode: 'batch' });
    await s.create(discarded);
    expect(await ledger.discard(discarded)).toBe(true);
    await expect(s.create(discarded)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(await t.db.generation.count({ where: { id: discarded.id } })).toBe(0);
    // Ended and charged: opened again, refused too; its record and charge stay as they were.
    const ended = gen(organizationId, { bound: '2', responseMode: 'batch' });
    await s.create(ended);
    expect((await finish(ledger, ended.id, { status: 'completed', cost: '1' })).applied).toBe(true);
    await expect(s.create(ended)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect((await t.db.generation.findFirstOrThrow({ where: { id: ended.id } })).status).toBe('completed');
    expect(await balances()).toEqual(['9.00', '2.00']);
    const entries = await t.db.ledgerEntry.groupBy({ by: ['generationId', 'kind'], where: { generationId: { in: [discarded.id, ended.id] } }, _count: true });
    expect(entries.map((e) => `${e.generationId === ended.id ? 'ended' : 'discarded'} ${e.kind} ${e._count}`).sort()).toEqual([
      'discarded release 1',
      'discarded reserve 1',
      'ended charge 1',
      'ended reserve 1',
    ]);
  });

  it('ends a record left running while its reservation was settled (as such an open wrote before): at what was settled, moving no money', async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '10' });
    const ledger = new Ledger(t.db);
    const s = new GenerationService(t.db, undefined, ledger);
    const g = gen(organizationId, { bound: '2', responseMode: 'batch' });
    await s.create(g);
    // The record as it was, put back after the discard: a `pending` generation whose reservation is released.
    const kept = `sy_kept_${n}`;
    await t.db.$executeRawUnsafe(`CREATE TABLE ${kept} AS SELECT * FROM generations WHERE id = $1`, g.id);
    expect(await ledger.discard(g)).toBe(true);
    await t.db.$executeRawUnsafe(`INSERT INTO generations SELECT * FROM ${kept}`);
    await t.db.$executeRawUnsafe(`DROP TABLE ${kept}`);
    const entries = () => t.db.ledgerEntry.count({ where: { generationId: g.id } });
    expect(await entries()).toBe(2);

    // The reaper's close (any close) ends it; a second one finds it ended.
    expect(await finish(ledger, g.id, { status: 'failed', error: { code: 'SERVICE_UNAVAILABLE', message: 'interrupted' } })).toMatchObject({ applied: true });
    const row = await t.db.generation.findFirstOrThrow({ where: { id: g.id } });
    expect([row.status, money(row.clientCost).toFixed(2)]).toEqual(['failed', '0.00']);
    expect((await finish(ledger, g.id, { status: 'cancelled' })).applied).toBe(false);
    expect(await entries()).toBe(2);
    const o = await t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
    expect([money(o.balance).toFixed(2), money(o.reserved).toFixed(2)]).toEqual(['10.00', '0.00']);
  });
});

describe('the ledger hot path over the injected pool', () => {
  it('reserves, refuses and settles exactly as through Prisma, with the same refusal wording', async () => {
    const run = async (ledger: Ledger) => {
      const { organizationId } = await seedOrg(t.db, { balance: '2.5' });
      const s = new GenerationService(t.db, undefined, ledger);
      const gens = Array.from({ length: 6 }, () => gen(organizationId, { bound: '0.9', minimum: '0.4' }));
      const results = await Promise.all(gens.map((g) => s.create(g).then((granted) => granted.toFixed(10), (e: AppError) => `${e.metadata?.reason}: ${e.message}`)));
      const created = gens.filter((_, i) => !results[i].includes(':'));
      await Promise.all(created.map((g, i) => finish(ledger, g.id, i % 2 ? { status: 'cancelled' } : { status: 'completed', cost: '0.3333333333' })));
      const org = await t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
      return { results: results.sort(), balance: money(org.balance).toFixed(10), reserved: money(org.reserved).toFixed(10), spent: money(org.spent).toFixed(10) };
    };
    const viaPrisma = await run(new Ledger(t.db));
    const viaPool = await run(new Ledger(t.db, undefined, { pool: t.pool }));
    expect(viaPool).toEqual(viaPrisma);
    expect(viaPool.results.filter((r) => r.startsWith('balance_insufficient: Insufficient funds'))).toHaveLength(3);
  });
});
