/**
 * Case 8. Several API and worker processes sharing nothing but Redis and PostgreSQL. A fixed workload gives the
 * same replies (statuses, usage, charges) with one API and one worker as with two of each; streams started on
 * either API process complete whichever worker runs them; a burst across both API processes never overspends;
 * a key's rate limit of N a minute lets exactly N requests through across both.
 */
import { money } from '../../shared/money';
import { settledAudit } from './helpers/audit';
import { MODELS, startCluster, type Cluster, type SeededOrg } from './helpers/cluster';
import { get, post, stream, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';

let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'multi-process', env: { SYNC_WAIT_MS: '20000' } });
});
afterAll(async () => {
  await c?.close();
});

/** One line per request of the fixed workload: what a client can see, without ids and times. */
async function workload(urls: string[], org: SeededOrg, tally: Tally): Promise<string[]> {
  const at = (i: number, p: string) => `${urls[i % urls.length]}${p}`;
  const jobs: Array<Promise<string>> = [];
  for (let i = 0; i < 16; i++) {
    jobs.push(
      post(at(i, '/v1/responses'), { model: MODELS.chat, input: `multi ${'x'.repeat(i * 7)}`, max_output_tokens: 64 }, org.auth).then((r) => {
        tally.add(r);
        return `responses ${i}: ${r.status} ${r.json?.output_text} ${JSON.stringify(r.json?.usage)}`;
      }),
    );
  }
  for (let i = 0; i < 4; i++) {
    jobs.push(
      post(at(i, '/v1/chat/completions'), { model: MODELS.chatFallback, messages: [{ role: 'user', content: `chat ${'y'.repeat(i * 5)}` }] }, org.auth).then((r) => {
        tally.add(r);
        return `chat ${i}: ${r.status} ${r.json?.choices?.[0]?.message?.content} ${JSON.stringify(r.json?.usage)}`;
      }),
    );
  }
  for (let i = 0; i < 4; i++) {
    jobs.push(
      post(at(i, '/v1/embeddings'), { model: MODELS.embedding, input: [`embed ${i}`, 'z'.repeat(i * 9 + 1)] }, org.auth).then((r) => {
        tally.add(r);
        return `embeddings ${i}: ${r.status} ${r.json?.data?.length} ${JSON.stringify(r.json?.usage)}`;
      }),
    );
  }
  for (let i = 0; i < 6; i++) {
    jobs.push(
      stream(at(i, '/v1/responses'), { model: MODELS.chat, input: `stream ${'s'.repeat(i * 3)}`, stream: true }, org.auth).then((s) => {
        tally.add(s);
        return `stream ${i}: ${s.status} ${s.events[s.events.length - 1]} ${s.text} ${JSON.stringify(s.final?.response?.usage)}`;
      }),
    );
  }
  for (let i = 0; i < 2; i++) {
    jobs.push(
      post(at(i, '/v2/images/generations'), { model: MODELS.image, prompt: `image ${i}`, n: i + 1 }, org.auth).then((r) => {
        tally.add(r);
        return `image ${i}: ${r.status} ${r.json?.data?.length} ${JSON.stringify(r.json?.usage)}`;
      }),
    );
  }
  return Promise.all(jobs);
}

test('two API and two worker processes: same results as one of each, no overspend, shared rate limits', async () => {
  const checks = new Checks('8. multi-process', '1 API + 1 worker, then 2 API + 2 worker processes on one Redis and one PostgreSQL: the same workload on each; a burst across both APIs against a 0.05 RUB balance; a 10/min rate limit hit through both');
  const tally = new Tally();
  const a1 = await c.startApi();
  await c.startWorker();
  await c.warmUp(a1);
  c.fake.setKnobs({ latencyMs: 150, chunkDelayMs: 30 });

  const single = await c.seed({ balance: '100' });
  const one = await workload([a1.url], single, tally);

  const a2 = await c.startApi();
  await c.startWorker();
  await c.waitForWorkers(2);
  await c.warmUp(a2);
  const multi = await c.seed({ balance: '100' });
  const two = await workload([a1.url, a2.url], multi, tally);
  const diff = one.map((line, i) => (line === two[i] ? null : `${line}  ≠  ${two[i]}`)).filter(Boolean);
  checks.that(diff.length === 0, `replies differ:\n${diff.join('\n')}`);
  checks.that(one.every((l) => / 200 /.test(l)), `single-process workload: ${one.filter((l) => !/ 200 /.test(l)).join(' | ')}`);
  checks.that(one.filter((l) => l.startsWith('stream')).every((l) => l.includes('response.completed')), 'every stream completed');
  // Each request's charge commits after its reply (reply, then settle): a read of the key through the API waits for
  // the settlements promised to its organization, as a client's would.
  for (const o of [single, multi]) checks.that((await get(`${a1.url}/v1/key`, o.auth)).status === 200, 'GET /v1/key');
  const spent = await c.db.organization.findMany({ where: { id: { in: [single.organizationId, multi.organizationId] } }, select: { id: true, spent: true } });
  const [s1, s2] = [single, multi].map((o) => money(spent.find((s) => s.id === o.organizationId)!.spent));
  checks.that(s1.equals(s2) && s1.greaterThan(0), `charged ${s1} with one of each, ${s2} with two of each`);

  // No overspend through two API processes and two workers.
  c.fake.setKnobs({ latencyMs: 100, completionTokens: 60, promptTokens: 5 });
  const poor = await c.seed({ balance: '0.05' });
  const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => post(`${[a1, a2][i % 2].url}/v1/responses`, { model: MODELS.chat, input: `burst ${i}`, max_output_tokens: 60 }, poor.auth)));
  tally.addAll(burst);
  const poorOrg = await c.db.organization.findUniqueOrThrow({ where: { id: poor.organizationId } });
  checks.that(!money(poorOrg.balance).isNegative(), `balance went below zero: ${poorOrg.balance}`);
  checks.that(burst.every((r) => r.status === 200 || (r.status === 402 && r.json?.error?.metadata?.reason === 'balance_insufficient')), `burst: ${[...new Set(burst.map((r) => r.status))].join(',')}`);

  // A rate limit of 10 a minute holds across both API processes (one fixed window: stay clear of its edge).
  const limited = await c.seed({ balance: '1', rateLimitPerMinute: 10 });
  await waitFor('a minute with time left in it', async () => new Date().getSeconds() <= 50, 70_000);
  const hits = await Promise.all(Array.from({ length: 30 }, (_, i) => get(`${[a1, a2][i % 2].url}/v1/key`, limited.auth)));
  tally.addAll(hits);
  const passed = hits.filter((h) => h.status === 200).length;
  checks.that(passed === 10 && hits.filter((h) => h.status === 429).length === 20, `rate limit 10/min across two APIs let ${passed} through (${[...new Set(hits.map((h) => h.status))].join(',')})`);
  checks.that(hits.filter((h) => h.status === 429).every((h) => !!h.headers?.get('retry-after')), '429 carries Retry-After');

  const a = await settledAudit(c.db, 20_000);
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `${one.length} replies identical (status, text, usage, cost) with 1+1 and 2+2 processes, both charged ${s1.toString()} RUB; streams on either API completed; burst over 2 APIs left balance ${poorOrg.balance.toString()} ≥ 0; rate limit 10/min: exactly ${passed} of 30 passed across both APIs`,
  });
  if (failures.length) console.error(c.tails(20));
  expect(failures).toEqual([]);
});
