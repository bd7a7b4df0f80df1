/**
 * Case 29. Clients leave their streams as PostgreSQL stops, under `npm start` with its defaults (WEB_CONCURRENCY=2, leases
 * on): 6 responses and 4 chat completions streams have their records committed and have delivered a few deltas when
 * PostgreSQL is stopped (fast shutdown), and every client hangs up at once. Each worker stops its provider call and
 * settles what the stream delivered (decisions.md section 4): its commit cannot come, so it is promised in Redis, as any
 * other settlement (docs/architecture.md "Endings and rules"); PostgreSQL comes back 5 s later.
 * What must hold: while PostgreSQL is away every such settlement is promised; once it is back, every stream's generation
 * ends failed and charged once for what it delivered (more than nothing, no more than the same stream left to finish); the
 * reaper releases none of them free; nothing is left promised, held, reserved or lost. Before the fix each settlement
 * failed with its commit, its job failed, and the reaper released every generation, uncharged.
 */
import { settledAudit } from './helpers/audit';
import { MODELS, useCluster } from './helpers/cluster';
import { stream } from './helpers/http';
import { checkNothingReserved, runKillCase } from './helpers/kill-case';
import { waitFor } from './helpers/wait';
import { pause } from '../helpers/until';

const AWAY_MS = 5_000;
const cluster = useCluster({ name: 'pg-outage-leave', env: { SYNC_WAIT_MS: '20000' } });

it('29. clients leave their streams as PostgreSQL stops: every delivered answer charged once when it is back, nothing left reserved', () =>
  runKillCase(
    cluster(),
    {
      name: '29. PostgreSQL stopped as clients leave',
      injected: `npm start, WEB_CONCURRENCY=2 (leases on); 6 responses and 4 chat completions streams (10 deltas, 200 ms apart) recorded and held by the provider after 3 deltas; PostgreSQL stopped (fast shutdown) and every client hangs up at once; started again ${AWAY_MS / 1000} s later`,
      input: 'leave',
    },
    async (k) => {
      const { c, checks, tally, org } = k;
      const warm = await Promise.all(Array.from({ length: 4 }, (_, i) => k.ask(i)));
      tally.addAll(warm);
      checks.that(warm.every((r) => r.status === 200), `warm-up: ${warm.map((r) => r.status).join(',')}`);

      c.fake.setKnobs({ streamChunks: 10, chunkDelayMs: 200 });
      const responses = (i: number) => ({ model: MODELS.chat, input: `leave stream ${i}`, stream: true, max_output_tokens: 64 });
      const chat = (i: number) => ({ model: MODELS.chat, messages: [{ role: 'user', content: `leave chat ${i}` }], stream: true, max_tokens: 64, stream_options: { include_usage: true } });
      // What the same stream costs left to finish: no stream cut short may cost more.
      const whole = [await stream(`${k.npm.url}/v1/responses`, responses(99), org.auth), await stream(`${k.npm.url}/v1/chat/completions`, chat(99), org.auth)];
      tally.addAll(whole);
      const wholeCost = Math.max(...whole.map((s) => Number(s.final?.response?.usage?.cost ?? s.final?.usage?.cost)));
      checks.that(whole.every((s) => s.ending === 'completed') && wholeCost > 0, `the whole streams: ${whole.map((s) => s.ending).join(',')}, ${wholeCost} RUB`);
      await k.settled();
      const before = await c.db.generation.count({ where: { organizationId: org.organizationId } });

      // The provider holds each stream after 3 deltas: PostgreSQL stops and the clients leave while every stream is
      // mid-way, however long stopping it takes.
      c.fake.setKnobs({ streamChunks: 10, chunkDelayMs: 200, holdAfterChunks: 3 });
      let leave!: () => void;
      const leaving = new Promise<void>((r) => (leave = r));
      const deltas: number[] = [];
      const opts = (n: number) => ({ timeoutMs: 60_000, leaveWhen: leaving, onDelta: () => void (deltas[n] = (deltas[n] ?? 0) + 1) });
      const streams = [
        ...Array.from({ length: 6 }, (_, i) => stream(`${k.npm.url}/v1/responses`, responses(i), org.auth, opts(i))),
        ...Array.from({ length: 4 }, (_, i) => stream(`${k.npm.url}/v1/chat/completions`, chat(i), org.auth, opts(6 + i))),
      ];
      const recorded = async () => (await c.db.generation.count({ where: { organizationId: org.organizationId } })) - before;
      await waitFor('the streams recorded and held mid-way', async () => (await recorded()) === streams.length && streams.every((_, i) => deltas[i] === 3), 10_000).catch(() => undefined);
      checks.that((await recorded()) === streams.length, `streams recorded before the outage: ${await recorded()} of ${streams.length}`);
      await c.pg.stop();
      leave();
      const replies = await Promise.all(streams);
      tally.addAll(replies);
      checks.that(replies.every((s) => s.leftEarly && s.deltas >= 2 && s.deltas < 10), `clients left mid-stream: ${replies.map((s) => `${s.deltas}/${s.leftEarly}`).join(',')}`);

      // While PostgreSQL is away, the workers' settlements of what the streams delivered wait in Redis as promises.
      await waitFor('the settlements promised', async () => (await c.conn.hlen(k.journal)) === streams.length, 10_000).catch(() => undefined);
      const promisedAway = await c.conn.hlen(k.journal);
      checks.that(promisedAway === streams.length, `settlements promised while PostgreSQL was away: ${promisedAway} of ${streams.length}`);
      await pause(AWAY_MS); // pacing: away a while longer with the promises waiting, the case's outage
      await c.pg.start();
      c.fake.setKnobs({});

      const ids = replies.map((s) => String(s.id));
      await waitFor('the streams settled', async () => (await c.db.generation.count({ where: { id: { in: ids }, status: { notIn: ['pending', 'processing'] } } })) === ids.length, 60_000).catch(() => undefined);
      const audit = await settledAudit(c.db, 30_000);
      const gens = await c.db.generation.findMany({ where: { id: { in: ids } }, select: { id: true, status: true, clientCost: true, error: true } });
      const charges = await c.db.$queryRawUnsafe<Array<{ id: string; n: number; charged: string }>>(
        `SELECT g.id, COUNT(l.id) FILTER (WHERE l.kind = 'charge')::int AS n, COALESCE(-SUM(l.amount) FILTER (WHERE l.kind = 'charge'), 0)::text AS charged
         FROM generations g LEFT JOIN ledger_entries l ON l.generation_id = g.id WHERE g.id = ANY ($1::text[]) GROUP BY g.id`,
        ids,
      );
      const chargeOf = new Map(charges.map((r) => [r.id, r]));
      const wrong = gens.filter((g) => {
        const ch = chargeOf.get(g.id);
        const cost = Number(g.clientCost);
        return g.status !== 'failed' || !(cost > 0) || cost > wholeCost || !ch || ch.n !== 1 || Math.abs(Number(ch.charged) - cost) > 1e-9;
      });
      checks.that(gens.length === ids.length && wrong.length === 0, `streams not charged once for what they delivered: ${wrong.map((g) => `${g.id} ${g.status} ${g.clientCost} ${JSON.stringify(chargeOf.get(g.id))} ${JSON.stringify(g.error)}`).join(' | ')}`);
      checks.that(audit.reaped === 0, `generations the reaper released: ${audit.reaped}`);
      await waitFor('no promise left', async () => (await c.conn.hlen(k.journal)) === 0, 10_000).catch(() => undefined);
      const promisedLeft = await c.conn.hlen(k.journal);
      checks.that(promisedLeft === 0, `promises left in Redis: ${promisedLeft}`);
      await waitFor('no lease left held', async () => (await k.leasesHeld()) === 0, 30_000).catch(() => undefined);
      checks.that((await k.leasesHeld()) === 0, `leases still held: ${await k.leasesHeld()}`);
      await checkNothingReserved(k);
      const total = gens.reduce((n, g) => n + Number(g.clientCost), 0);
      return {
        audit,
        holds: `${replies.length} clients left after ${Math.min(...replies.map((s) => s.deltas))}-${Math.max(...replies.map((s) => s.deltas))} of 10 deltas as PostgreSQL stopped; ${promisedAway} settlements promised while it was away; once back, ${gens.length - wrong.length} of ${ids.length} generations failed and charged once for what they delivered (${total.toFixed(6)} RUB in all, none above the whole stream's ${wholeCost}), ${audit.reaped} released by the reaper; no promise, lease, reservation or money left over`,
      };
    },
  ));
