/**
 * Switchyard on a real Redis Cluster (started by test/scale/global-setup.ts): every key of a deployment on one
 * slot, the queue dashboard, and a master killed in the middle of a burst of requests.
 */
import fs from 'node:fs';
import request from 'supertest';
import { Cluster } from 'ioredis';
import { money } from '../../shared/money';
import { createTestStack, STACK_MODELS, type TestStack } from '../helpers/test-stack';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { masterOf, spawnNode, waitClusterHealthy } from './helpers/redis-cluster';
import { signOperatorToken } from '../../shared/auth/operator-tokens';
import { TEST_SECRET, orgMoney } from '../helpers/fixtures';
import { pause, waitFor } from '../helpers/until';

const ports = (process.env.SCALE_CLUSTER_PORTS ?? '').split(',').filter(Boolean).map(Number);
const onCluster = TEST_REDIS_URL.startsWith('redis+cluster://') && ports.length > 0;
const describeCluster = onCluster ? describe : describe.skip;

let s: TestStack;
let org: Awaited<ReturnType<TestStack['seed']>>;
beforeAll(async () => {
  if (!onCluster) return;
  s = await createTestStack({ env: { SYNC_WAIT_MS: '20000' } });
  org = await s.seed({ balance: '1000' });
});
afterAll(async () => {
  if (!s) return;
  // Known (docs/scaling.md): after a failover a BullMQ worker's blocking connection can keep Worker.close() from
  // returning; a deployment's shutdown deadline (SHUTDOWN_TIMEOUT_MS) exits then. Here: close without waiting on
  // the workers after a grace period, and leave the rest to --forceExit.
  const timeout = (ms: number) => new Promise<false>((r) => setTimeout(() => r(false), ms).unref());
  const graceful = await Promise.race([s.pool.close().then(() => true), timeout(10_000)]);
  if (!graceful) void Promise.all(s.pool.workers.map((w) => w.close(true).catch(() => undefined)));
  await Promise.race([s.close(), timeout(15_000)]);
}, 60_000);

const prefix = () => s.ctx.config.queuePrefix;
const chat = (input: string) => request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: input }] });

describeCluster('Redis Cluster', () => {
  it('is what the service talks to, and keeps every key of a deployment on one slot', async () => {
    expect((s.ctx.redis as unknown) instanceof Cluster).toBe(true);
    const res = await chat('hello');
    expect(res.status).toBe(200);
    const cluster = s.ctx.redis as unknown as Cluster;
    const slots = new Set<number>();
    let keys = 0;
    for (const node of cluster.nodes('master')) {
      for (const k of await node.keys(`${prefix()}*`)) {
        keys++;
        slots.add(Number(await node.cluster('KEYSLOT', k)));
      }
    }
    expect(keys).toBeGreaterThan(0);
    expect(slots.size).toBe(1);
  });

  it('serves the queue dashboard (bull-board) from the cluster', async () => {
    // The dashboard is for operators (docs/operator.md): an operator token, not an organization's.
    const res = await request(s.app).get('/admin/queues/api/queues').set({ Authorization: `Bearer ${signOperatorToken(TEST_SECRET)}` });
    expect(res.status).toBe(200);
    expect(res.body.queues.map((q: { name: string }) => q.name)).toEqual(expect.arrayContaining(['text', 'media']));
  });

  it('survives a master killed mid-burst: every request completes or ends in a clear error, nothing stuck, every charge once', async () => {
    s.fake.setKnobs({ latencyMs: 150, promptTokens: 10, completionTokens: 10 });
    // The balance before the burst once the earlier tests' generations have settled (a close replied to commits in
    // the background, gathered with others: docs/architecture.md "Endings and rules").
    const open = () => s.t.db.generation.count({ where: { organizationId: org.organizationId, status: { in: ['pending', 'processing'] } } });
    await waitFor('the earlier generations settled', async () => (await open()) === 0, 10_000);
    const before = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    const victim = await masterOf(ports, prefix());
    const replies: Array<Promise<request.Response>> = [];
    const started = Date.now();
    let killedAt = 0;
    // About 20 requests a second for 3 s; the master holding every queue key dies after one second.
    while (Date.now() - started < 3000) {
      replies.push(chat(`burst ${replies.length}`).then((r) => r, (e: Error) => ({ status: 0, body: { error: { code: e.message } } }) as request.Response));
      if (!killedAt && Date.now() - started > 1000) {
        const pid = Number(fs.readFileSync(`${process.env.SCALE_CLUSTER_DIR}/${victim}/redis.pid`, 'utf8'));
        process.kill(pid, 'SIGKILL');
        killedAt = Date.now();
      }
      await pause(50); // pacing: about 20 requests a second
    }
    const results = await Promise.all(replies);
    const statuses = results.map((r) => r.status);
    const ok = statuses.filter((st) => st === 200).length;
    const unclear = results.filter((r) => r.status !== 200 && !([408, 503].includes(r.status) && typeof r.body.error?.code === 'string'));
    if (unclear.length) console.log('unclear endings', JSON.stringify(unclear.map((r) => ({ status: r.status, body: r.body }))));
    // A clear ending: the answer, or our error envelope with a retryable status.
    for (const r of results) {
      if (r.status === 200) expect(r.body.choices[0].message.content).toMatch(/^Echo: burst/);
      else expect({ clear: [408, 503].includes(r.status) && typeof r.body.error?.code === 'string', status: r.status, body: r.body }).toMatchObject({ clear: true });
    }
    expect(ok).toBeGreaterThan(0);
    await waitClusterHealthy(ports, 30_000);
    const newMaster = await masterOf(ports.filter((p) => p !== victim), prefix());
    expect(newMaster).not.toBe(victim);

    // No generation stays pending or processing once the cluster is back (settled within the sync wait).
    await waitFor('no generation open', async () => (await open()) === 0, 30_000, 300).catch(() => undefined);
    expect(await open()).toBe(0);
    // Every charge exactly once: nothing reserved by a request (a lease's unspent part is money set aside, not held),
    // the ledger sums to the balance, and what was charged is what the completed generations cost.
    const after = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    expect((await orgMoney(s.t.db, org.organizationId)).reserved.isZero()).toBe(true);
    const [ledger] = await s.t.db.$queryRaw<Array<{ s: string }>>`SELECT COALESCE(SUM(amount),0)::text AS s FROM ledger_entries WHERE organization_id = ${org.organizationId}`;
    expect(money(ledger!.s).equals(money(after.balance))).toBe(true);
    const [cost] = await s.t.db.$queryRaw<Array<{ s: string; n: number }>>`SELECT COALESCE(SUM(client_cost),0)::text AS s, (COUNT(*) FILTER (WHERE status = 'completed'))::int AS n FROM generations WHERE organization_id = ${org.organizationId} AND created_at >= ${new Date(started)}`;
    expect(money(before.balance).minus(money(after.balance)).equals(money(cost!.s))).toBe(true);
    expect(cost!.n).toBeGreaterThanOrEqual(ok);
    // eslint-disable-next-line no-console
    console.log(`failover burst: ${results.length} requests, ${ok} completed, others ${JSON.stringify(statuses.filter((st) => st !== 200))}; master ${victim} killed ${killedAt - started} ms in, ${newMaster} took over`);

    // The killed node comes back and rejoins as a replica, for the files that run after this one.
    spawnNode(process.env.SCALE_CLUSTER_DIR!, victim).child.unref();
    await waitClusterHealthy(ports, 30_000);
    // And the service keeps serving on the healed cluster.
    const later = await chat('after the failover');
    expect(later.status).toBe(200);
  });
});
