/**
 * Case 28. PostgreSQL away 10 s mid-batch (issue 38 item 6: 62 of 600 lines answered 503 in the error file, for the
 * client to send again). A batch's lines run when PostgreSQL is stopped (fast shutdown: connections cut, transactions
 * rolled back) and started again 10 s later; no process is restarted. What must hold: the lines whose orders or
 * endings the outage failed (a 503 of ours, nothing charged) are ordered again by the driver; the batch completes
 * with every custom_id answered once, 200, each answered line charged exactly once, its failed tries released, the
 * batch's cost what the ledger charged, and nothing left held or reserved.
 */
import { settledAudit } from './helpers/audit';
import { batchGenerations, chatLines, createBatch, ENDED, fileLines, sumCharged, upload } from './helpers/batches';
import { useCluster } from './helpers/cluster';
import { get, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { pause } from '../helpers/until';
import { money } from '../../shared/money';

const LINES = 400;
const AWAY_MS = 10_000;

const cluster = useCluster({ name: 'batch-pg-outage', env: { SYNC_WAIT_MS: '40000', BATCH_POLL_MS: '50', BATCH_LINES_IN_FLIGHT: '32' } });

it('28. PostgreSQL away 10 s mid-batch: the lines it failed are ordered again, every line answered 200 once and charged once, nothing reserved', async () => {
  const c = cluster();
  const checks = new Checks('28. PostgreSQL away mid-batch', `1 API + 1 worker; a ${LINES}-line chat batch (32 lines in flight, provider latency 100 ms); PostgreSQL stopped (fast shutdown) once 80 lines are answered, started again ${AWAY_MS / 1000} s later; no process restarted`);
  const tally = new Tally();
  const api = await c.startApi();
  const worker = await c.startWorker();
  await c.warmUp(api);
  c.fake.setKnobs({ latencyMs: 100 });
  const org = await c.seed({ balance: '1000' });
  const created = await createBatch(api, org, await upload(api, org, chatLines(LINES, 'pg')));
  tally.add(created);
  const id = created.json.id as string;
  const row = () => c.db.batch.findUniqueOrThrow({ where: { id }, select: { status: true, completed: true, failed: true } });

  await waitFor('80 lines answered', async () => (await row()).completed >= 80, 60_000);
  const atStop = await row();
  await c.pg.stop();
  await pause(AWAY_MS); // pacing: the outage's length, the case's scenario
  await c.pg.start();
  const upAt = Date.now();
  await waitFor('the batch ended', async () => ENDED.includes((await row().catch(() => ({ status: '' }))).status), 120_000).catch(() => undefined);
  const endedS = (Date.now() - upAt) / 1000;

  const b = (await get(`${api.url}/v1/batches/${id}`, org.auth)).json as { status: string; request_counts: { total: number; completed: number; failed: number }; output_file_id: string | null; error_file_id: string | null };
  checks.that(b.status === 'completed', `batch status ${b.status} ${endedS.toFixed(0)} s after PostgreSQL came back`);
  checks.that(api.alive && worker.alive, 'a process died');
  const out = await fileLines(api, org, b.output_file_id);
  const errors = await fileLines(api, org, b.error_file_id);
  const answered = [...out, ...errors].map((l) => l.custom_id);
  checks.that(answered.length === LINES && new Set(answered).size === LINES, `${answered.length} lines answered (${new Set(answered).size} distinct custom_ids) of ${LINES}`);
  checks.that(errors.length === 0, `${errors.length} error lines: ${[...new Set(errors.map((e) => `${e.response.status_code} ${e.response.body.error?.code}`))].join(', ')}`);
  const gens = await batchGenerations(c.db, id);
  checks.that(gens.every((g) => g.settlements === 1 && g.charges <= 1), `settlements/charges per generation ${[...new Set(gens.map((g) => `${g.status} ${g.settlements}/${g.charges}`))].join(',')}`);
  const charged = new Set(gens.filter((g) => g.charges === 1).map((g) => g.id));
  checks.that(charged.size === out.length && out.every((l) => charged.has(l.response.request_id!)), `${out.length} output lines, ${charged.size} charged generations`);
  const cost = money((await c.db.batch.findUniqueOrThrow({ where: { id } })).cost);
  checks.that(cost.equals(sumCharged(gens)), `batch cost ${cost} vs the ledger's ${sumCharged(gens)}`);
  const retried = gens.filter((g) => /t\d+$/.test(g.id)).length;
  const released = gens.filter((g) => g.status === 'failed' && g.charges === 0).length;

  const a = await settledAudit(c.db, 30_000);
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `PostgreSQL stopped at ${atStop.completed + atStop.failed}/${LINES} answered, back ${AWAY_MS / 1000} s later; the batch completed ${endedS.toFixed(1)} s after: ${out.length} lines answered 200, each custom_id once, none 503; ${gens.length} generations (${retried} later tries, ${released} failed tries released), the ${charged.size} charged exactly the output lines; cost ${sumCharged(gens)} RUB = the ledger's; no reservation held; ledger = balances`,
  });
  if (failures.length) console.error(c.tails(30));
  expect(failures).toEqual([]);
}, 240_000);
