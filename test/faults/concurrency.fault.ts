/**
 * Case 7. Bursts of concurrent requests against one key's spending limit and one organization's small balance.
 * What must hold: the balance never goes below zero, the key never spends past its limit, the refused ones are
 * 402 with the right reason, and the ledger still equals the balances.
 */
import { money } from '../../shared/money';
import { settledAudit } from './helpers/audit';
import { MODELS, startCluster, type Cluster } from './helpers/cluster';
import { post, Tally } from './helpers/http';
import { Checks } from './helpers/report';

let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'concurrency', env: { SYNC_WAIT_MS: '20000' } });
});
afterAll(async () => {
  await c?.close();
});

test('bursts against one key limit and one organization balance never overspend', async () => {
  const checks = new Checks('7. concurrency bursts', '2 bursts of 60 simultaneous requests: one against a key limit of 0.05 RUB (balance ample), one against an organization balance of 0.05 RUB (3 keys, no limits); each request costs ~0.0096 RUB');
  const api = await c.startApi();
  await c.startWorker();
  await c.warmUp(api);
  // ~0.0096 RUB a request (60 output tokens at 160 RUB per million); the fake reports that usage whatever is asked.
  c.fake.setKnobs({ latencyMs: 100, completionTokens: 60, promptTokens: 5 });
  const tally = new Tally();
  const body = (i: number) => ({ model: MODELS.chat, input: `burst ${i}`, max_output_tokens: 60 });

  // 1. One key with a limit, on an organization with plenty of money.
  const limited = await c.seed({ balance: '100', keyLimit: '0.05' });
  const burst1 = await Promise.all(Array.from({ length: 60 }, (_, i) => post(`${api.url}/v1/responses`, body(i), limited.auth)));
  tally.addAll(burst1);
  const key = await c.db.apiKey.findUniqueOrThrow({ where: { id: limited.key.id } });
  checks.that(money(key.usage).lessThanOrEqualTo(money('0.05')), `key spent ${key.usage} over its limit 0.05`);
  checks.that(burst1.every((r) => r.status === 200 || (r.status === 402 && r.json?.error?.metadata?.reason === 'key_limit_exceeded')), `burst 1 statuses: ${[...new Set(burst1.map((r) => `${r.status}:${r.json?.error?.metadata?.reason ?? ''}`))].join(',')}`);
  const ok1 = burst1.filter((r) => r.status === 200).length;
  checks.that(ok1 >= 1 && ok1 < 60, `burst 1: ${ok1} served`);

  // 2. One organization with a small balance, three keys without limits.
  const poor = await c.seed({ balance: '0.05' });
  const keys = [poor.auth, (await seedKey(poor.organizationId)).auth, (await seedKey(poor.organizationId)).auth];
  const burst2 = await Promise.all(Array.from({ length: 60 }, (_, i) => post(`${api.url}/v1/responses`, body(i), keys[i % 3])));
  tally.addAll(burst2);
  const org = await c.db.organization.findUniqueOrThrow({ where: { id: poor.organizationId } });
  checks.that(!money(org.balance).isNegative(), `organization balance went below zero: ${org.balance}`);
  checks.that(burst2.every((r) => r.status === 200 || (r.status === 402 && r.json?.error?.metadata?.reason === 'balance_insufficient')), `burst 2 statuses: ${[...new Set(burst2.map((r) => `${r.status}:${r.json?.error?.metadata?.reason ?? ''}`))].join(',')}`);
  const ok2 = burst2.filter((r) => r.status === 200).length;
  checks.that(ok2 >= 1 && ok2 < 60, `burst 2: ${ok2} served`);

  const a = await settledAudit(c.db, 20_000);
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `key limit 0.05: ${ok1}/60 served, key spent ${key.usage.toString()} ≤ 0.05; balance 0.05: ${ok2}/60 served, balance left ${org.balance.toString()} ≥ 0; refusals 402 with the right reason; ledger = balances`,
  });
  if (failures.length) console.error(c.tails(20));
  expect(failures).toEqual([]);

  async function seedKey(organizationId: string) {
    const k = await c.accounts.createKey({ organizationId, name: 'burst' });
    return { auth: { Authorization: `Bearer ${k.key}`, 'Content-Type': 'application/json' } };
  }
});
