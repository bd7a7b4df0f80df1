/**
 * Cases 2 and 3: a backing service (Redis, PostgreSQL) goes away under steady load and comes back. What must
 * hold: 503 SERVICE_UNAVAILABLE at once while it is away (no hang, no 500), recovery by itself, nothing left
 * pending, and the ledger still equal to the balances.
 */
import { settledAudit } from './audit';
import { MODELS, type Cluster } from './cluster';
import { get, post, Tally } from './http';
import { startLoad } from './load';
import { Checks } from './report';
import { waitFor } from './wait';
import { pause } from '../../helpers/until';

export interface OutageCase {
  c: Cluster;
  name: string;
  injected: string;
  syncWaitMs: number;
  down(): Promise<void>;
  up(): Promise<void>;
  /** How long the service stays away (ms). */
  awayMs?: number;
}

export async function runOutage(o: OutageCase): Promise<string[]> {
  const { c } = o;
  const checks = new Checks(o.name, o.injected);
  const api = await c.startApi();
  await c.startWorker();
  await c.warmUp(api);
  c.fake.setKnobs({ latencyMs: 300 });
  // A key with a (high) rate limit of its own: the limiter counts in Redis on every request, as in production.
  const org = await c.seed({ balance: '1000', rateLimitPerMinute: 1_000_000 });
  const body = (i: number, extra: object = {}) => ({ model: MODELS.chat, input: `outage ${i}`, max_output_tokens: 32, ...extra });

  const sync = startLoad(6, (i) => post(`${api.url}/v1/responses`, body(i), org.auth, 30_000));
  const background = startLoad(1, (i) => post(`${api.url}/v1/responses`, body(10_000 + i, { background: true }), org.auth, 30_000), { pauseMs: 200 });
  // Cheap authenticated reads never wait for a worker, so they keep probing the API all through the outage.
  const reads = startLoad(3, () => get(`${api.url}/v2/balance`, org.auth, 30_000), { pauseMs: 20 });
  const live = () => [...sync.samples, ...background.samples, ...reads.samples];
  const answered = (l: { samples: Array<{ status: number }> }) => l.samples.filter((x) => x.status === 200).length;
  // The load runs before the fault: every sync caller, the background caller and every reader answered.
  await waitFor('the load to be answered', () => answered(sync) >= 6 && answered(background) >= 1 && answered(reads) >= 3, 30_000);
  const downAt = Date.now();
  await o.down();
  const downDone = Date.now();
  // Away for the case's length (pacing), and until requests met it: the checks below judge them.
  await pause(o.awayMs ?? 3000);
  await waitFor('requests answered while away', () => live().filter((x) => x.start > downDone + 100).length >= 3, 30_000);
  const upStart = Date.now();
  await o.up();
  const upAt = Date.now();
  // Back, until requests sent 4 s after it have answered (what "4 s after the restart" below is about).
  await waitFor('requests answered after the restart', () => live().filter((x) => x.start >= upAt + 4000).length >= 6, 60_000);
  const samples = [...(await sync.stop()), ...(await background.stop()), ...(await reads.stop())];
  const tally = new Tally();
  tally.addAll(samples);

  const during = samples.filter((s) => s.start > downDone + 100 && s.start < upStart);
  const inFlight = samples.filter((s) => s.start <= downAt && s.end > downAt);
  const after = samples.filter((s) => s.start >= upAt + 4000);
  const firstOk = samples.filter((s) => s.start >= upAt && s.status === 200).sort((a, b) => a.end - b.end)[0];
  const odd = samples.filter((s) => ![200, 503, 408].includes(s.status));
  checks.that(odd.length === 0, `only 200, 503 and 408 expected: ${tally.summary()} ${odd.map((s) => `${s.status} ${s.text}`).slice(0, 3).join(' | ')}`);
  checks.that(during.length > 0 && during.every((s) => s.status === 503 && s.code === 'SERVICE_UNAVAILABLE'), `while away: ${during.map((s) => `${s.status}/${s.code}`).join(',')}`);
  const slowest = Math.max(0, ...during.map((s) => s.end - s.start));
  checks.that(slowest <= 3000, `a request during the outage took ${slowest} ms`);
  const inFlightMax = Math.max(0, ...inFlight.map((s) => s.end - s.start));
  checks.that(inFlightMax <= o.syncWaitMs + 3000, `in-flight requests took up to ${inFlightMax} ms`);
  checks.that(!!firstOk && firstOk.end - upAt <= 5000, `first success ${firstOk ? firstOk.end - upAt : 'never'} ms after the service came back`);
  checks.that(after.length > 0 && after.every((s) => s.status === 200), `4 s after the restart: ${after.map((s) => s.status).join(',')}`);

  const a = await settledAudit(c.db, 30_000);
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds:
      `${during.length} requests while away: all 503 SERVICE_UNAVAILABLE, slowest ${slowest} ms; ${inFlight.length} in flight at the fault answered within ${inFlightMax} ms; ` +
      `first 200 ${firstOk ? firstOk.end - upAt : '-'} ms after the restart; ${a.generations} generations all ended (${Object.entries(a.byStatus).map(([k, v]) => `${k} ${v}`).join(', ')}; ${a.reaped} by the reaper); ` +
      'no reservation held; ledger = balances',
  });
  if (failures.length) console.error(c.tails(30));
  return failures;
}
