import OpenAI from 'openai';
import request from 'supertest';
import { closeRowOf, Ledger, type OpenRow } from '../../shared/billing/ledger';
import { LeaseDesk, type LeaseSettings } from '../../shared/billing/leases';
import { money, ZERO, type Decimal } from '../../shared/money';
import { AppError } from '../../shared/errors/app-error';
import { createLogger } from '../../shared/logger';
import { KeyInfoService } from '../../shared/services/key-info.service';
import { stuckGenerationReaper } from '../../workers/processors/reap-stuck-generations.processor';
import { audit } from '../faults/helpers/audit';
import { seedKey, seedOrg } from '../helpers/fixtures';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { pause, waitFor, waitUntil } from '../helpers/until';
import type { Pool } from 'pg';
import { reportStats } from '../helpers/pg-stats';

// Reservation leases (shared/billing/leases.ts, docs/architecture.md "Leases"): a process reserves room for a few
// requests ahead; a request its lease covers calls its provider while its record commits. The money rules stay
// PostgreSQL's: nothing is drawn that sy_reserve did not grant, and every lease ends released.

const logger = createLogger({ silent: !process.env.TEST_LOGS });

/** Deadlocks PostgreSQL broke in the pool's database, as every backend of the pool has reported them. */
async function deadlocks(pool: Pool): Promise<number> {
  await reportStats(pool);
  return Number((await pool.query(`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`)).rows[0].deadlocks);
}

describe('requests through the API drawn from a lease', () => {
  let s: TestStack;
  let org: StackOrg;
  beforeAll(async () => {
    // A lease idle 2 s is given back: long enough for a test's request under the organization's row lock to still find
    // the lease its warm-up took (one given back first took the reserved path, which waits on that lock: CI timed out
    // with 400 ms on a loaded machine), short enough for the tests that wait for every lease to be given back.
    s = await createTestStack({ env: { LEASE_REQUESTS: '16', LEASE_HEADROOM: '4', LEASE_IDLE_MS: '2000', LEASE_TTL_MS: '5000' } });
    org = await s.seed({ balance: '1000', keyLimit: '900' });
  });
  afterAll(() => s.close());

  const leases = async () => (await s.t.pool.query(`SELECT generation_id, status::text AS status, amount::text AS amount FROM reservations WHERE expires_at IS NOT NULL`)).rows;
  const leasesReleased = () => waitUntil(async () => ((await leases()).every((l) => l.status === 'released') ? true : undefined));
  const chat = () => request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }] });
  /** `requests` answered through `ask`, then a lease held and every settlement so far committed. */
  const warmUntilLeased = async (ask: () => Promise<{ status: number }> = chat, requests = 2) => {
    for (let i = 0; i < requests; i++) expect((await ask()).status).toBe(200);
    await waitUntil(async () => ((await leases()).some((l) => l.status === 'held') ? true : undefined));
    await s.settled(org.organizationId);
  };
  /** Runs `body` while the organization's row is locked from outside (every record of it waits in PostgreSQL), then unlocks it. */
  const whileRowLocked = async <T>(body: () => Promise<T>): Promise<T> => {
    const lock = await s.t.pool.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [org.organizationId]);
      return await body();
    } finally {
      await lock.query('ROLLBACK');
      lock.release();
    }
  };

  it('answers through the OpenAI SDK, charges each generation exactly once, and shows no lease as reserved', async () => {
    const client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
    let charged = ZERO;
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      if (i % 2 === 0) {
        const r = await client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: `hi ${i}` }] });
        expect(r.choices[0].message.content).toBeTruthy();
        ids.push(r.id);
        charged = charged.plus(money((r.usage as unknown as { cost_rub: number }).cost_rub));
      } else {
        const stream = await client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: `hi ${i}` }], stream: true, stream_options: { include_usage: true } });
        let text = '';
        let id = '';
        let cost: number | undefined;
        for await (const chunk of stream) {
          id = chunk.id;
          text += chunk.choices[0]?.delta?.content ?? '';
          if (chunk.usage) cost = (chunk.usage as unknown as { cost_rub: number }).cost_rub;
        }
        expect(text.length).toBeGreaterThan(0);
        ids.push(id);
        charged = charged.plus(money(cost!));
      }
    }
    await s.settled(org.organizationId);

    // A lease was taken after the first request, and the later ones were drawn from it: their reservation entries
    // move no money (the lease's entry reserved it).
    const held = await leases();
    expect(held.length).toBeGreaterThanOrEqual(1);
    const drawn = (await s.t.pool.query(`SELECT COUNT(*)::int AS n FROM ledger_entries WHERE kind = 'reserve' AND reserved_delta = 0 AND generation_id = ANY ($1)`, [ids])).rows[0].n;
    expect(drawn).toBeGreaterThanOrEqual(8);

    // What the caller sees as reserved while the lease is held: nothing (no request runs).
    const [balance, key] = await Promise.all([request(s.app).get('/v2/balance').set(org.auth), request(s.app).get('/v1/key').set(org.auth)]);
    expect(balance.body.reserved).toBe('0.000000');
    expect(money(balance.body.amount).toFixed(6)).toBe(money(1000).minus(charged).toFixed(6));
    expect(balance.body.available).toBe(money(balance.body.key.limit).minus(charged).toFixed(6));
    expect(key.body.limit_remaining).toBeCloseTo(900 - charged.toNumber(), 6);

    // Each generation: completed, its cost recorded and charged once.
    const gens = (await s.t.pool.query(`SELECT g.id, g.status::text AS status, g.client_cost::text AS cost, r.charged::text AS charged, r.status::text AS rs
        FROM generations g JOIN reservations r ON r.generation_id = g.id WHERE g.id = ANY ($1)`, [ids])).rows;
    expect(gens).toHaveLength(12);
    for (const g of gens) {
      expect(g.status).toBe('completed');
      expect(g.rs).toBe('charged');
      expect(money(g.cost).equals(money(g.charged))).toBe(true);
    }

    // Idle, the lease goes back: nothing stays reserved and the ledger adds up.
    await leasesReleased();
    const a = await audit(s.t.db);
    expect(a.problems).toEqual([]);
    const o = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    expect(money(o.balance).toFixed(10)).toBe(money(1000).minus(charged).toFixed(10));
  });

  it('under 32 concurrent clients: every request charged once, and PostgreSQL never breaks a deadlock', async () => {
    const before = await deadlocks(s.t.pool);
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 32 }, async (_, c) => {
        for (let i = 0; i < 12; i++) {
          const r = await request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: `c${c} ${i}` }] });
          expect(r.status).toBe(200);
          ids.push(r.body.id);
        }
      }),
    );
    await s.settled(org.organizationId);
    await leasesReleased();
    expect(await deadlocks(s.t.pool)).toBe(before);
    const charged = (await s.t.pool.query(`SELECT COUNT(*)::int AS n FROM ledger_entries WHERE kind = 'charge' AND generation_id = ANY ($1)`, [ids])).rows[0].n;
    expect(charged).toBe(32 * 12);
    expect((await audit(s.t.db)).problems).toEqual([]);
  }, 120_000); // 384 requests: as long as the machine takes (30 s was not enough beside busy processes)

  it('a request whose record cannot be written answers 503 in the envelope, charges nothing and leaves nothing held', async () => {
    await warmUntilLeased();
    const before = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    const recordsBefore = await s.t.db.generation.count({ where: { organizationId: org.organizationId } });
    const ledger = s.ctx.ledger as unknown as { openDrawn: (...a: unknown[]) => Promise<unknown> };
    const real = ledger.openDrawn;
    ledger.openDrawn = () => Promise.reject(new Error('the database went away'));
    let r;
    try {
      r = await chat();
    } finally {
      ledger.openDrawn = real;
    }
    expect(r.status).toBe(503);
    expect(r.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    await s.settled(org.organizationId);
    await leasesReleased();
    const after = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    expect(money(after.balance).equals(money(before.balance))).toBe(true);
    expect(await s.t.db.generation.count({ where: { organizationId: org.organizationId } })).toBe(recordsBefore);
    expect((await audit(s.t.db)).problems).toEqual([]);
  });

  it('replies before its record commits: the promise carries the record, a read waits for it, and it is charged once', async () => {
    await warmUntilLeased();
    const before = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    const { r, promised, balance } = await whileRowLocked(async () => {
      const r = await chat();
      expect(r.status).toBe(200);
      expect(await s.t.db.generation.count({ where: { id: r.body.id } })).toBe(0);
      const promised = await s.ctx.settlements.read(org.organizationId, r.body.id);
      expect(promised?.open).toMatchObject({ id: r.body.id, organization_id: org.organizationId });
      expect(promised?.row).toMatchObject({ id: r.body.id, status: 'completed' });
      // A read that shows money waits for the promise (read-your-writes), through the record's commit.
      const waits = jest.spyOn(s.ctx.settlements, 'waitSettled');
      const balance = request(s.app).get('/v2/balance').set(org.auth).then((res) => res);
      await waitFor('the read to wait for the promise', () => waits.mock.calls.length > 0);
      waits.mockRestore();
      return { r, promised, balance };
    });
    const cost = money((r.body.usage as { cost_rub: number }).cost_rub);
    expect(cost.greaterThan(0)).toBe(true);
    expect(money((await balance).body.amount).toFixed(6)).toBe(money(before.balance).minus(cost).toFixed(6));
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id: r.body.id } });
    expect(g.status).toBe('completed');
    expect(money(g.clientCost!).toFixed(6)).toBe(cost.toFixed(6));
    expect(await s.ctx.settlements.read(org.organizationId, r.body.id)).toBeNull();

    // A promise left behind whose job no longer runs (its process died before the record committed) is kept by the
    // reaper: the generation recorded and charged the replied cost once. One whose record is there already changes
    // nothing (kept twice, charged once).
    const lost = `${r.body.id}-lost`;
    await s.ctx.settlements.promise(org.organizationId, { ...promised!, replyTo: null, at: 0, open: { ...promised!.open!, id: lost }, row: { ...promised!.row, id: lost } });
    await s.ctx.settlements.promise(org.organizationId, { ...promised!, replyTo: null, at: 0 });
    await stuckGenerationReaper(s.workerDeps, { everyMs: 60_000, minAgeMs: 60_000 })();
    const charges = (await s.t.pool.query(`SELECT generation_id, amount::text AS amount FROM ledger_entries WHERE kind = 'charge' AND generation_id = ANY ($1) ORDER BY generation_id`, [[r.body.id, lost]])).rows;
    expect(charges.map((c: { generation_id: string }) => c.generation_id)).toEqual([r.body.id, lost]);
    expect(charges.every((c: { amount: string }) => money(c.amount).abs().toFixed(6) === cost.toFixed(6))).toBe(true);
    expect((await s.t.db.generation.findFirstOrThrow({ where: { id: lost } })).status).toBe('completed');
    expect(await s.ctx.settlements.read(org.organizationId, lost)).toBeNull();
    expect(await s.ctx.settlements.read(org.organizationId, r.body.id)).toBeNull();
    await leasesReleased();
    expect((await audit(s.t.db)).problems).toEqual([]);
  });

  it('a masked reply (its job data swapped by the masker) replied to before its record commits: its promise carries the record', async () => {
    const respond = (input: string) => request(s.app).post('/v1/responses').set(org.auth).send({ model: STACK_MODELS.chat, input, plugins: ['masker'] });
    await warmUntilLeased(() => respond('warm, mail anna@example.org'));
    const { r, promised } = await whileRowLocked(async () => {
      const r = await respond('mail anna@example.org');
      expect(r.status).toBe(200);
      expect(await s.t.db.generation.count({ where: { id: r.body.id } })).toBe(0);
      return { r, promised: await s.ctx.settlements.read(org.organizationId, r.body.id) };
    });
    // Without its record in the promise, a crash before the commit would leave nothing to charge.
    expect(promised?.open).toMatchObject({ id: r.body.id, organization_id: org.organizationId });
    await s.settled(org.organizationId);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id: r.body.id } });
    expect(money(g.clientCost!).toFixed(6)).toBe(money(r.body.usage.cost_rub).toFixed(6));
    // The run's pending records are gone with it.
    await waitUntil(async () => (s.workerDeps.lane.pendingRecords === 0 ? true : undefined));
    await leasesReleased();
    expect((await audit(s.t.db)).problems).toEqual([]);
  });

  it('a response replied to before its record commits is found by id and as previous_response_id once it commits', async () => {
    const respond = (body: object) => request(s.app).post('/v1/responses').set(org.auth).send({ model: STACK_MODELS.chat, ...body });
    await warmUntilLeased(() => respond({ input: 'warm' }));
    const { r, byId, next } = await whileRowLocked(async () => {
      const r = await respond({ input: 'remember 42' });
      expect(r.status).toBe(200);
      expect(await s.t.db.generation.count({ where: { id: r.body.id } })).toBe(0);
      // Both wait for the promise that carries the record, through its commit.
      const waits = jest.spyOn(s.ctx.settlements, 'waitSettled');
      const byId = request(s.app).get(`/v1/responses/${r.body.id}`).set(org.auth).then((res) => res);
      const next = respond({ input: 'what number?', previous_response_id: r.body.id }).then((res) => res);
      await waitFor('both to wait for the promise', () => waits.mock.calls.length >= 2);
      waits.mockRestore();
      return { r, byId, next };
    });
    expect((await byId).status).toBe(200);
    expect((await byId).body).toMatchObject({ id: r.body.id, status: 'completed' });
    expect((await next).status).toBe(200);
    await s.settled(org.organizationId);
    await leasesReleased();
    expect((await audit(s.t.db)).problems).toEqual([]);
  });

  it('a record that fails after its reply went out on a promise is written by the promise: charged once, the reply stands', async () => {
    await warmUntilLeased();
    // The API's record fails once the reply is out; the worker's run keeps its promise (recording it itself).
    const ledger = s.ctx.ledger as unknown as { openDrawn: (...a: unknown[]) => Promise<unknown> };
    const real = ledger.openDrawn;
    let replied!: () => void;
    const out = new Promise<void>((resolve) => (replied = resolve));
    ledger.openDrawn = () => out.then(() => Promise.reject(new Error('the database went away')));
    let r;
    try {
      r = await chat();
      replied();
    } finally {
      ledger.openDrawn = real;
    }
    expect(r.status).toBe(200);
    const cost = money((r.body.usage as { cost_rub: number }).cost_rub);
    await waitUntil(async () => ((await s.t.db.generation.findFirst({ where: { id: r.body.id } }))?.status === 'completed' ? true : undefined));
    await s.settled(org.organizationId);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id: r.body.id } });
    expect(money(g.clientCost!).toFixed(6)).toBe(cost.toFixed(6));
    const charges = (await s.t.pool.query(`SELECT COUNT(*)::int AS n FROM ledger_entries WHERE kind = 'charge' AND generation_id = $1`, [r.body.id])).rows[0].n;
    expect(charges).toBe(1);
    expect(await s.ctx.settlements.read(org.organizationId, r.body.id)).toBeNull();
    await leasesReleased();
    expect((await audit(s.t.db)).problems).toEqual([]);
  });

  it("a key's new limit revokes its leases: nothing leased under the old limit is drawn again, and they are given back", async () => {
    await warmUntilLeased(chat, 3);
    const patched = await request(s.app).patch(`/v1/keys/${org.key.id}`).set({ Authorization: `Bearer ${org.ownerToken}` }).send({ limit: 800 });
    expect(patched.status).toBe(200);
    // Every lease under the old limit is revoked (or already given back).
    const held = (await s.t.pool.query(`SELECT generation_id, revoked_at FROM reservations WHERE expires_at IS NOT NULL AND status = 'held'`)).rows;
    expect(held.filter((l: { revoked_at: Date | null }) => l.revoked_at === null)).toEqual([]);
    // This process (the one that served the change) draws nothing more from them: the next request reserves for
    // itself, and they are given back.
    const r = await chat();
    expect(r.status).toBe(200);
    const own = (await s.t.pool.query(`SELECT reserved_delta::text AS delta FROM ledger_entries WHERE kind = 'reserve' AND generation_id = $1`, [r.body.id])).rows[0];
    expect(money(own.delta).greaterThan(0)).toBe(true);
    const ids = held.map((l: { generation_id: string }) => l.generation_id);
    await waitUntil(async () => ((await leases()).every((l) => !ids.includes(l.generation_id) || l.status === 'released') ? true : undefined));
    await s.settled(org.organizationId);
    await leasesReleased();
    const a = await audit(s.t.db);
    expect(a.problems).toEqual([]);
  });
});

describe('leases of two processes racing for one balance (the ledger, real PostgreSQL)', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb();
  });
  afterAll(() => t.drop());

  const settings: LeaseSettings = { requests: 4, headroom: 2, idleMs: 150, ttlMs: 5_000, maxAgeMs: 600 };
  const row = (organizationId: string, apiKeyId: string, id: string, bound: Decimal): OpenRow => ({
    id, organization_id: organizationId, api_key_id: apiKeyId, user_id: null, bound: bound.toFixed(10), minimum: bound.toFixed(10),
    model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync',
  });

  it('never spends more than the balance or the key limit, charges every answered request, and leaves nothing reserved', async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '40' });
    const key = await seedKey(accounts, organizationId, { limit: '30', reset: 'daily' });
    const processes = [0, 1].map(() => {
      const ledger = new Ledger(t.db, undefined, { pool: t.pool });
      return { ledger, leases: new LeaseDesk(ledger, settings, logger) };
    });
    const deadlocksBefore = await deadlocks(t.pool);
    let n = 0;
    let answered = ZERO;
    let refused = 0;
    let drawnCount = 0;
    // 8 clients per process, each asking until refused twice in a row; costs are 40–100 % of the bound.
    const client = async (p: (typeof processes)[number]) => {
      let refusals = 0;
      while (refusals < 2) {
        const id = `gen_race_${n++}`;
        const bound = money((0.2 + (n % 7) * 0.1).toFixed(1));
        const lease = p.leases.draw({ organizationId, apiKeyId: key.id, userId: null }, bound);
        let granted: Decimal;
        if (lease) {
          drawnCount++;
          granted = await p.ledger.openDrawn({ ...row(organizationId, key.id, id, bound), lease });
          p.leases.opened(lease, granted);
        } else {
          try {
            const o = await p.ledger.open(row(organizationId, key.id, id, bound));
            granted = 'granted' in o ? o.granted : ZERO;
          } catch (e) {
            if (!(e instanceof AppError)) throw e;
            refused++;
            refusals++;
            await pause(5); // pacing: a refused client asks again a moment later
            continue;
          }
        }
        refusals = 0;
        await pause(n % 3); // pacing: the generation runs 0-2 ms, so opens and closes of both processes interleave
        const cost = bound.times(0.4 + (n % 4) * 0.2);
        const c = await p.ledger.close({ id, status: 'completed', cost: cost.toFixed(10) });
        expect(c.applied).toBe(true);
        answered = answered.plus(c.charged);
      }
    };
    await Promise.all(processes.flatMap((p) => Array.from({ length: 8 }, () => client(p))));
    await Promise.all(processes.map((p) => p.leases.close()));

    expect(drawnCount).toBeGreaterThan(10);
    // Drawn opens, closes, takes, renewals and returns of two processes lock in one order: PostgreSQL never had to
    // break a deadlock.
    expect(await deadlocks(t.pool)).toBe(deadlocksBefore);
    expect(refused).toBeGreaterThan(0);
    const a = await audit(t.db);
    expect(a.problems).toEqual([]);
    expect(a.lost.isZero()).toBe(true);
    const k = await t.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
    const o = await t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
    // Everything charged is what the answered requests were told, within the key's limit, and the key ran close to it.
    expect(money(k.usage).equals(answered)).toBe(true);
    expect(money(o.balance).equals(money(40).minus(answered))).toBe(true);
    expect(money(k.usage).lessThanOrEqualTo(30)).toBe(true);
    expect(money(k.usage).greaterThan(28)).toBe(true);
  });

  it('a lease its process stopped renewing is released by the reaper once expired; a request drawn from it after that is charged only what the room allows', async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '10' });
    const key = await seedKey(accounts, organizationId, {});
    const ledger = new Ledger(t.db, undefined, { pool: t.pool });
    const taken = await ledger.takeLease({ id: 'lease_dead', organizationId, apiKeyId: key.id, userId: null, amount: '8', headroom: '8', expiresAt: new Date(Date.now() - 1) });
    expect(taken).toEqual({ granted: money(8) });
    // Too close to the balance for a second lease of 8 (room 2 against a headroom of 8).
    expect(await ledger.takeLease({ id: 'lease_thin', organizationId, apiKeyId: key.id, userId: null, amount: '1', headroom: '8', expiresAt: new Date(Date.now() + 60_000) })).toEqual({ refused: 'thin' });

    const reap = stuckGenerationReaper({ db: t.db, generations: { sweepLeases: () => ledger.sweepLeases() } as never, settlements: { withRecordsOlderThan: async () => [] } as never, redis: {} as never, ledger: ledger, lane: {} as never, config: {} as never, clock: () => new Date(), logger }, { everyMs: 60_000, minAgeMs: 60_000_000 });
    expect(await reap()).toEqual({ reaped: 0, leases: 1 });
    const o = await t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
    expect(money(o.reserved).isZero()).toBe(true);
    expect(await ledger.renewLeases(['lease_dead'], new Date(Date.now() + 60_000))).toEqual(new Map());

    // A request of the dead process drawn before it died, recorded only now, after the key got a limit of 2: an empty
    // reservation; its close takes what the limit allows and records the rest as uncollected.
    await accounts.updateKey(key.id, { limit: '2', reset: 'never' });
    const granted = await ledger.openDrawn({ ...row(organizationId, key.id, 'gen_late', money(3)), lease: 'lease_dead' });
    expect(granted.isZero()).toBe(true);
    const c = await ledger.close({ id: 'gen_late', status: 'completed', cost: '3' });
    expect(c.charged.toFixed(2)).toBe('2.00');
    const r = (await t.pool.query(`SELECT uncollected::text FROM reservations WHERE generation_id = 'gen_late'`)).rows[0];
    expect(money(r.uncollected).toFixed(2)).toBe('1.00');
    const a = await audit(t.db);
    expect(a.problems.filter((p) => p.includes(organizationId))).toEqual([]);
  });

  it("reads a row's reserved money and its leases as one snapshot: a lease taken or given back after the row was read is counted on both sides or neither", async () => {
    const { organizationId } = await seedOrg(t.db, { balance: '10' });
    const ledger = new Ledger(t.db, undefined, { pool: t.pool });
    const info = new KeyInfoService(t.db);
    const read = () => t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
    const reserved = async (row: Awaited<ReturnType<typeof read>>) => money((await info.unleased('organization_id', [row]))[0].reserved).toFixed(2);

    // Read before a lease is taken: nothing reserved (read apart, the lease counted on one side only showed -4).
    const beforeTake = await read();
    expect(await ledger.takeLease({ id: 'lease_snapshot', organizationId, apiKeyId: null, userId: null, amount: '4', headroom: '4', expiresAt: new Date(Date.now() + 60_000) })).toEqual({ granted: money(4) });
    expect(money((await read()).reserved).toFixed(2)).toBe('4.00');
    expect(await reserved(beforeTake)).toBe('0.00');

    // Read while it is held, then given back: still nothing reserved (read apart: 4, the lease's money shown as held).
    const whileHeld = await read();
    await ledger.returnLease('lease_snapshot');
    expect(money((await read()).reserved).toFixed(2)).toBe('0.00');
    expect(await reserved(whileHeld)).toBe('0.00');
  });

  it('a close that comes while its drawn record waits for its group writes the record once, ended: the same money, record and totals as a record then its close', async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '100' });
    const member = await accounts.createUser({ organizationId, email: `m@${organizationId.toLowerCase()}.example.com`, role: 'member', limit: '50', reset: 'monthly' });
    const key = await seedKey(accounts, organizationId, { userId: member.userId, limit: '40', reset: 'daily' });
    const ledger = new Ledger(t.db, undefined, { pool: t.pool });
    expect(await ledger.takeLease({ id: 'lease_fold', organizationId, apiKeyId: key.id, userId: member.userId, amount: '10', headroom: '1', expiresAt: new Date(Date.now() + 60_000) })).toEqual({ granted: money(10) });
    // Every update of a generation record, seen by a trigger of the test's own.
    await t.pool.query(`CREATE TABLE seen_updates (id text);
      CREATE FUNCTION seen_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO seen_updates VALUES (NEW.id); RETURN NULL; END $$;
      CREATE TRIGGER seen_update AFTER UPDATE ON generations FOR EACH ROW EXECUTE FUNCTION seen_update();`);
    const open = (id: string) => ({
      ...row(organizationId, key.id, id, money(2)), user_id: member.userId, lease: 'lease_fold', unified_model_id: 'u',
      request: { messages: [{ role: 'user', content: 'hi' }] }, routing: { requested: 'm' }, warnings: ['w'], trace_id: 't',
    });
    // Answered by a fallback model, charged less than its bound, then (the second pair) more than it: the excess comes from free room.
    const close = (id: string, cost: string) => closeRowOf(id, {
      status: 'completed', cost, result: { text: 'hello' }, usage: { input_tokens: 3, output_tokens: 5 }, routing: { attempts: [{ model: 'm2' }] },
      model: 'm2', provider: 'p', finalEndpointSlug: 'p/m2', finishReason: 'stop', attemptsCount: 2, latencyMs: 12, queueTimeMs: 1, generationTimeMs: 11, upstreamId: 'up',
    });
    const settled = (c: { applied: boolean; charged: Decimal }) => ({ applied: c.applied, charged: c.charged.toFixed(4) });
    for (const cost of ['1.5', '2.5']) {
      // Folded: the record waits in its gathering (GATHER_MS) when its close comes.
      const drawn = ledger.openDrawn(open(`gen_fold_${cost}`), { background: true });
      const folded = ledger.close(close(`gen_fold_${cost}`, cost), { background: true, after: drawn });
      expect((await drawn).toFixed(2)).toBe('2.00');
      expect(settled(await folded)).toEqual({ applied: true, charged: money(cost).toFixed(4) });
      // Apart: the record commits, then its close (with nothing left to fold into, it follows the commit).
      const committed = ledger.openDrawn(open(`gen_apart_${cost}`));
      expect((await committed).toFixed(2)).toBe('2.00');
      expect(settled(await ledger.close(close(`gen_apart_${cost}`, cost), { background: true, after: committed }))).toEqual({ applied: true, charged: money(cost).toFixed(4) });
      // A second close of either changes nothing.
      expect((await ledger.close(close(`gen_fold_${cost}`, '9'))).applied).toBe(false);
    }
    const q = async (text: string) => (await t.pool.query(text, [organizationId])).rows;
    expect((await t.pool.query(`SELECT id FROM seen_updates ORDER BY id`)).rows).toEqual([{ id: 'gen_apart_1.5' }, { id: 'gen_apart_2.5' }]);
    // The records, their contents, reservations and ledger entries, each folded one as its twin written apart.
    const both = async (text: string) => {
      const rows = await q(text);
      const by = (kind: string) => rows.filter((r) => r.id.startsWith(`gen_${kind}_`)).map((r) => ({ ...r, id: r.id.replace(`gen_${kind}_`, '') }));
      expect(by('fold')).toEqual(by('apart'));
      return by('fold');
    };
    const records = await both(`SELECT id, api_key_id, user_id, model, unified_model_id, request_type, api_type, response_mode, status::text, finish_reason,
        provider, final_endpoint_slug, usage, client_cost::text, reserved_amount::text, request, result, error, warnings, routing, attempts_count,
        latency_ms, queue_time_ms, generation_time_ms, is_cancelled, upstream_id, trace_id, completed_at IS NOT NULL AS ended
      FROM generations WHERE organization_id = $1 ORDER BY id`);
    expect(records[0]).toMatchObject({ status: 'completed', model: 'm2', unified_model_id: 'u', routing: { requested: 'm', attempts: [{ model: 'm2' }] }, ended: true });
    expect(await both(`SELECT c.generation_id AS id, c.request, c.result FROM generation_contents c JOIN generations g ON g.id = c.generation_id WHERE g.organization_id = $1 ORDER BY 1`)).toHaveLength(2);
    expect(await both(`SELECT generation_id AS id, amount::text, charged::text, uncollected::text, status::text FROM reservations WHERE organization_id = $1 AND expires_at IS NULL ORDER BY 1`)).toHaveLength(2);
    expect(await both(`SELECT generation_id AS id, kind::text, amount::text, reserved_delta::text FROM ledger_entries WHERE organization_id = $1 AND generation_id LIKE 'gen_%' ORDER BY 1, 2`)).toHaveLength(4);
    const [org] = await q(`SELECT balance::text, reserved::text FROM organizations WHERE id = $1`);
    expect({ balance: money(org.balance).toFixed(2), reserved: money(org.reserved).toFixed(2) }).toEqual({ balance: '92.00', reserved: '2.00' });
    const [requests] = await q(`SELECT SUM(requests)::int AS n, SUM(usage)::text AS usage FROM activity_org_totals WHERE organization_id = $1`);
    expect({ n: requests.n, usage: money(requests.usage).toFixed(2) }).toEqual({ n: 4, usage: '8.00' });
    await ledger.returnLease('lease_fold');
    expect((await audit(t.db)).problems.filter((p) => p.includes(organizationId))).toEqual([]);
  });

  it("a stream's record waits for its close (closeWaitMs) and is written once with it; asked for, or its time up, it is written alone", async () => {
    const { accounts, organizationId } = await seedOrg(t.db, { balance: '100' });
    const key = await seedKey(accounts, organizationId, { limit: '40', reset: 'daily' });
    const ledger = new Ledger(t.db, undefined, { pool: t.pool });
    expect(await ledger.takeLease({ id: 'lease_wait', organizationId, apiKeyId: key.id, userId: null, amount: '10', headroom: '1', expiresAt: new Date(Date.now() + 60_000) })).toEqual({ granted: money(10) });
    await t.pool.query(`CREATE TABLE seen_wait_updates (id text);
      CREATE FUNCTION seen_wait_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO seen_wait_updates VALUES (NEW.id); RETURN NULL; END $$;
      CREATE TRIGGER seen_wait_update AFTER UPDATE ON generations FOR EACH ROW EXECUTE FUNCTION seen_wait_update();`);
    const open = (id: string) => ({ ...row(organizationId, key.id, id, money(2)), lease: 'lease_wait' });
    const close = (id: string) => closeRowOf(id, { status: 'completed', cost: '1.5', result: { text: 'hello' }, usage: { input_tokens: 3, output_tokens: 5 } });
    const recorded = async (id: string) => (await t.pool.query(`SELECT status::text FROM generations WHERE id = $1`, [id])).rows[0]?.status;

    // Its close comes: one write, ended, whatever `after` says (the record is not committed: nothing to wait for).
    const waiting = ledger.openDrawn(open('gen_wait'), { background: true, closeWaitMs: 60_000 });
    expect(await recorded('gen_wait')).toBeUndefined();
    expect((await ledger.close(close('gen_wait'), { background: true, after: waiting })).charged.toFixed(2)).toBe('1.50');
    expect((await waiting).toFixed(2)).toBe('2.00');
    // Asked for (a background stream reads itself back): written now, pending; its close then updates it.
    const asked = ledger.openDrawn(open('gen_asked'), { background: true, closeWaitMs: 60_000 });
    ledger.writeNow('gen_asked');
    expect((await asked).toFixed(2)).toBe('2.00');
    expect(await recorded('gen_asked')).toBe('pending');
    await ledger.close(close('gen_asked'), { background: true, after: asked });
    // Its time up (a stream longer than STREAM_RECORD_WAIT_MS): written alone, pending.
    const outlasted = ledger.openDrawn(open('gen_outlasted'), { background: true, closeWaitMs: 1 });
    expect((await outlasted).toFixed(2)).toBe('2.00');
    expect(await recorded('gen_outlasted')).toBe('pending');
    await ledger.close(close('gen_outlasted'));

    expect((await t.pool.query(`SELECT id FROM seen_wait_updates ORDER BY id`)).rows).toEqual([{ id: 'gen_asked' }, { id: 'gen_outlasted' }]);
    const records = (await t.pool.query(`SELECT id, status::text, client_cost::text FROM generations WHERE organization_id = $1 ORDER BY id`, [organizationId])).rows;
    expect(records.map((r) => [r.id, r.status, money(r.client_cost).toFixed(2)])).toEqual([
      ['gen_asked', 'completed', '1.50'],
      ['gen_outlasted', 'completed', '1.50'],
      ['gen_wait', 'completed', '1.50'],
    ]);
    await ledger.returnLease('lease_wait');
    const [org] = (await t.pool.query(`SELECT balance::text, reserved::text FROM organizations WHERE id = $1`, [organizationId])).rows;
    expect({ balance: money(org.balance).toFixed(2), reserved: money(org.reserved).toFixed(2) }).toEqual({ balance: '95.50', reserved: '0.00' });
    expect((await audit(t.db)).problems.filter((p) => p.includes(organizationId))).toEqual([]);
  });
});
