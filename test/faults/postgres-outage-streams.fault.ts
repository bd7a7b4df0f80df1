/**
 * Case 21. PostgreSQL goes away for longer than SYNC_WAIT_MS while streams are running, under `npm start` with its
 * defaults (WEB_CONCURRENCY=2, leases on): 6 responses and 4 chat completions streams have their records committed
 * and are sending deltas when PostgreSQL stops (fast shutdown); they finish while it is away, so none of them can
 * commit its settlement before its last event; PostgreSQL comes back once they have ended, SYNC_WAIT_MS at least, 10 s
 * at most.
 * What must hold: every stream ends with a final event while PostgreSQL is still away (no hang: `response.completed`
 * or `response.failed`, chat's `[DONE]` or error chunk); every reply that showed a cost is charged exactly that cost,
 * once, after PostgreSQL is back (docs/architecture.md "Endings and rules"); no stream whose content reached its
 * client ends uncharged (the reaper fails none of them); nothing is left promised, held, reserved or lost.
 */
import { settledAudit } from './helpers/audit';
import { MODELS, useCluster } from './helpers/cluster';
import { stream, type StreamReply } from './helpers/http';
import { checkNothingReserved, runKillCase } from './helpers/kill-case';
import { refusesConnections } from './helpers/services';
import { waitFor } from './helpers/wait';

// Above how long stopping PostgreSQL takes on a busy machine (2-3 s): a stream held that long must not time out.
const SYNC_WAIT_MS = 5_000;
const AWAY_MS = 10_000;
const cluster = useCluster({ name: 'pg-outage-streams', env: { SYNC_WAIT_MS: String(SYNC_WAIT_MS) } });

/** The cost a stream's final event showed (responses: `response.usage.cost`; chat: the usage chunk's `cost`), if any. */
const shownCost = (s: StreamReply): number | undefined => {
  const cost = s.final?.response?.usage?.cost ?? s.final?.usage?.cost;
  return cost === undefined ? undefined : Number(cost);
};

it('21. PostgreSQL away longer than SYNC_WAIT_MS under streams: every stream ends with a final event, every shown cost charged once when it is back', () =>
  runKillCase(
    cluster(),
    {
      name: '21. PostgreSQL outage under streams',
      injected: `npm start, WEB_CONCURRENCY=2 (leases on), SYNC_WAIT_MS ${SYNC_WAIT_MS}; 6 responses and 4 chat completions streams (8 deltas, 250 ms apart) recorded and held by the provider after 2 deltas while PostgreSQL is stopped (fast shutdown), then let go; started again once every stream has ended and ${SYNC_WAIT_MS / 1000} s have passed (${AWAY_MS / 1000} s at most)`,
      input: 'outage',
    },
    async (k) => {
      const { c, checks, tally, org } = k;
      const warm = await Promise.all(Array.from({ length: 4 }, (_, i) => k.ask(i)));
      tally.addAll(warm);
      checks.that(warm.every((r) => r.status === 200), `warm-up: ${warm.map((r) => r.status).join(',')}`);
      await k.settled();
      const before = await c.db.generation.count({ where: { organizationId: org.organizationId } });

      // The provider holds each stream after 2 deltas until the knobs are set again: PostgreSQL stops while every stream
      // is mid-way, however long stopping it takes.
      c.fake.setKnobs({ streamChunks: 8, chunkDelayMs: 250, holdAfterChunks: 2 });
      let deltas = 0;
      const opts = { timeoutMs: 60_000, onDelta: () => deltas++ };
      const streams = [
        ...Array.from({ length: 6 }, (_, i) => stream(`${k.npm.url}/v1/responses`, { model: MODELS.chat, input: `outage stream ${i}`, stream: true, max_output_tokens: 64 }, org.auth, opts)),
        ...Array.from({ length: 4 }, (_, i) =>
          stream(`${k.npm.url}/v1/chat/completions`, { model: MODELS.chat, messages: [{ role: 'user', content: `outage chat ${i}` }], stream: true, max_tokens: 64, stream_options: { include_usage: true } }, org.auth, opts),
        ),
      ];
      // Every stream recorded (its record and reservation committed) and sending deltas before PostgreSQL goes.
      const recorded = async () => (await c.db.generation.count({ where: { organizationId: org.organizationId } })) - before;
      await waitFor('the streams recorded and held mid-way', async () => (await recorded()) === streams.length && deltas === streams.length * 2, 10_000).catch(() => undefined);
      const recordedBefore = await recorded();
      checks.that(recordedBefore === streams.length, `streams recorded before the outage: ${recordedBefore} of ${streams.length}`);
      const downAt = Date.now();
      const stopping = c.pg.stop();
      // Let go once PostgreSQL refuses connections (its sessions ended with it), not once its stop has ended: the
      // shutdown checkpoint takes seconds on a busy machine, and a stream silent that long would outlast SYNC_WAIT_MS.
      await waitFor('PostgreSQL to refuse connections', () => refusesConnections(c.pg.url), 10_000).catch(() => undefined);
      const refusedAt = Date.now();
      checks.that(deltas === streams.length * 2, `deltas before PostgreSQL was stopped: ${deltas}, not 2 a stream (${refusedAt - downAt} ms to refuse connections)`);
      c.fake.setKnobs({ streamChunks: 8, chunkDelayMs: 250 }); // the streams go on
      await stopping;
      // Away until every stream has ended (one that waits for PostgreSQL would not): then what the checks below judge
      // happened while it was away, however slow the machine.
      const over = new Set<number>();
      streams.forEach((s, i) => void s.then(() => over.add(i)));
      // (And away longer than SYNC_WAIT_MS, the case's outage.)
      await waitFor('every stream to end while PostgreSQL is away', async () => over.size === streams.length && Date.now() - downAt > SYNC_WAIT_MS, AWAY_MS).catch(() => undefined);
      // The streams still open as it comes back waited for it.
      const waited = new Set([...streams.keys()].filter((i) => !over.has(i)));
      const upAt = Date.now();
      await c.pg.start();
      c.fake.setKnobs({});
      const replies = await Promise.all(streams);
      tally.addAll(replies);

      const unfinished = replies.filter((s) => s.status !== 200 || !s.ending);
      checks.that(unfinished.length === 0, `streams without a final event: ${unfinished.length} of ${replies.length} (${unfinished.map((s) => `${s.status} ${s.events.slice(-2).join('>')} ${s.error ?? ''}`).join(' | ')})`);
      const late = replies.filter((_, i) => waited.has(i));
      checks.that(late.length === 0, `streams that waited for PostgreSQL to come back: ${late.length} (ended ${late.map((s) => s.endedAt - upAt).join(',')} ms after it)`);
      checks.that(replies.every((s) => s.deltas === 8), `deltas received: ${replies.map((s) => s.deltas).join(',')}`);
      const slowest = Math.max(...replies.map((s) => s.endedAt - downAt));

      // After PostgreSQL is back: every stream's generation ends (the run's retries or the reaper keep the promises).
      const ids = replies.map((s) => String(s.id));
      await waitFor('the streams settled', async () => (await c.db.generation.count({ where: { id: { in: ids }, status: { notIn: ['pending', 'processing'] } } })) === ids.length, 60_000).catch(() => undefined);
      const audit = await settledAudit(c.db, 30_000);
      const gens = await c.db.generation.findMany({ where: { id: { in: ids } }, select: { id: true, status: true, clientCost: true, error: true } });
      const byId = new Map(gens.map((g) => [g.id, g]));
      const charges = await c.db.$queryRawUnsafe<Array<{ id: string; n: number; charged: string }>>(
        `SELECT g.id, COUNT(l.id) FILTER (WHERE l.kind = 'charge')::int AS n, COALESCE(-SUM(l.amount) FILTER (WHERE l.kind = 'charge'), 0)::text AS charged
         FROM generations g LEFT JOIN ledger_entries l ON l.generation_id = g.id WHERE g.id = ANY ($1::text[]) GROUP BY g.id`,
        ids,
      );
      const chargeOf = new Map(charges.map((r) => [r.id, r]));
      const costed = replies.filter((s) => shownCost(s) !== undefined);
      checks.that(costed.length === replies.length, `replies that showed a cost: ${costed.length} of ${replies.length} (${replies.filter((s) => shownCost(s) === undefined).map((s) => JSON.stringify(s.final)).join(' | ')})`);
      const wrong = costed.filter((s) => {
        const ch = chargeOf.get(String(s.id));
        return !ch || ch.n !== 1 || Math.abs(Number(ch.charged) - shownCost(s)!) > 1e-6 || Math.abs(Number(byId.get(String(s.id))?.clientCost) - shownCost(s)!) > 1e-6;
      });
      checks.that(wrong.length === 0, `shown costs without exactly one matching charge: ${wrong.map((s) => `${s.id} showed ${shownCost(s)}, ${JSON.stringify(chargeOf.get(String(s.id)))} ${byId.get(String(s.id))?.status}`).join(', ')}`);
      const free = gens.filter((g) => !(Number(g.clientCost) > 0));
      checks.that(free.length === 0, `streams whose content reached the client charged nothing: ${free.map((g) => `${g.id} ${g.status} ${JSON.stringify(g.error)}`).join(', ')}`);
      const promised = () => c.conn.hlen(k.journal);
      await waitFor('no promise left', async () => (await promised()) === 0, 10_000).catch(() => undefined);
      const promisedLeft = await promised();
      checks.that(promisedLeft === 0, `promises left in Redis: ${promisedLeft}`);
      await waitFor('no lease left held', async () => (await k.leasesHeld()) === 0, 30_000).catch(() => undefined);
      const leases = await k.leasesHeld();
      checks.that(leases === 0, `leases still held: ${leases}`);
      await checkNothingReserved(k);
      const endings = replies.reduce<Record<string, number>>((n, s) => ({ ...n, [s.ending ?? 'none']: (n[s.ending ?? 'none'] ?? 0) + 1 }), {});
      return {
        audit,
        holds: `${recordedBefore} streams recorded and streaming when PostgreSQL went; ${replies.length - unfinished.length} of ${replies.length} ended with a final event, ${replies.length - late.length} of them while it was away (${Object.entries(endings).map(([e, n]) => `${e} ${n}`).join(', ')}), the last ${slowest} ms after it went; once it was back, ${costed.length - wrong.length} of ${costed.length} shown costs charged exactly once (${gens.filter((g) => g.status === 'completed').length} completed), ${free.length} charged 0; no promise, lease, reservation or money left over`,
      };
    },
  ));
