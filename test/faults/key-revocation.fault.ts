/**
 * Case 12. A key revoked or disabled through one API process while another API process keeps serving it from its
 * in-memory key cache (api/middleware/auth.ts caches lookups for 1 s so the database stays off the hot path). The
 * change's message (shared/runtime/key-changes.ts) makes the other process forget it at once; the cache's second is
 * the bound that holds even where that message is lost.
 * What must hold: the other process refuses the key within one second of the revoking reply, and never accepts
 * it again; the same for a key disabled with PATCH, and for one enabled again (accepted within a second).
 */
import { startCluster, type Cluster, type Proc } from './helpers/cluster';
import { call, get, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { waitFor as poll } from '../helpers/until';

const BOUND_MS = 1000;
let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'key-revocation' });
});
afterAll(async () => {
  await c?.close();
});

/**
 * Keeps `other`'s cache hot with the key (requests back to back), runs `change` through the first process, then
 * polls `other` until its status for the key is `want`: returns the milliseconds from the change's reply to the
 * first such answer, and whether any later answer went back.
 */
async function propagation(other: Proc, auth: Record<string, string>, want: number, change: () => Promise<number>, tally: Tally): Promise<{ ms: number; flapped: boolean; changed: number }> {
  let hot = true;
  let served = 0;
  const warm = (async () => {
    while (hot) {
      const r = await get(`${other.url}/v1/models`, auth);
      tally.add(r);
      if (r.status !== want) served++;
    }
  })();
  // Its cache holds the key as it stands: `other` has answered with it.
  await waitFor('the other process to serve the key as it stands', async () => served >= 2, 10_000);
  const changed = await change();
  const at = Date.now();
  hot = false;
  await warm;
  let ms = -1;
  let flapped = false;
  // Asked every ~10 ms for up to 3 s, and 300 ms on after the first answer that shows the change.
  const settled = async () => {
    const r = await get(`${other.url}/v1/models`, auth);
    tally.add(r);
    if (r.status === want && ms < 0) ms = Date.now() - at;
    else if (ms >= 0 && r.status !== want) flapped = true;
    return ms >= 0 && Date.now() - at > ms + 300;
  };
  await poll('the change seen for 300 ms', settled, 3000, 10).catch(() => undefined);
  return { ms, flapped, changed };
}

it('12. a key revoked or disabled through one API process is refused by another within 1 s', async () => {
  const checks = new Checks('12. key revoked on another process', `two API processes; the key's cache kept hot on the second while the first revokes (DELETE), disables and enables it (PATCH)`);
  const tally = new Tally();
  const [a, b] = [await c.startApi(), await c.startApi()];
  const org = await c.seed();
  const owner = { Authorization: `Bearer ${org.ownerToken}`, 'Content-Type': 'application/json' };
  const keyUrl = (id: string) => `${a.url}/v1/keys/${id}`;

  // Disable through A, B refuses; enable through A, B accepts again.
  const disabled = await propagation(b, org.auth, 401, async () => (await call('PATCH', keyUrl(org.key.id), { disabled: true }, owner)).status, tally);
  checks.that(disabled.changed === 200, `PATCH disabled answered ${disabled.changed}`);
  checks.that(disabled.ms >= 0 && disabled.ms <= BOUND_MS && !disabled.flapped, `disabled key accepted by the other process for ${disabled.ms} ms (flapped ${disabled.flapped})`);
  const enabled = await propagation(b, org.auth, 200, async () => (await call('PATCH', keyUrl(org.key.id), { disabled: false }, owner)).status, tally);
  checks.that(enabled.ms >= 0 && enabled.ms <= BOUND_MS && !enabled.flapped, `enabled key refused by the other process for ${enabled.ms} ms`);

  // Revoke through A, B refuses with api_key_revoked.
  const revoked = await propagation(b, org.auth, 401, async () => (await call('DELETE', keyUrl(org.key.id), undefined, owner)).status, tally);
  checks.that(revoked.changed === 200, `DELETE answered ${revoked.changed}`);
  checks.that(revoked.ms >= 0 && revoked.ms <= BOUND_MS && !revoked.flapped, `revoked key accepted by the other process for ${revoked.ms} ms (flapped ${revoked.flapped})`);
  const after = await get(`${b.url}/v1/models`, org.auth);
  checks.that(after.json?.error?.code === 'api_key_revoked' || after.json?.error?.type === 'api_key_revoked' || JSON.stringify(after.json).includes('revoked'), `revoked key's refusal: ${JSON.stringify(after.json)}`);

  const failures = checks.finish({
    requests: tally.total,
    errors: tally.errors(),
    moneyLost: '0',
    holds: `the other API process refused the key ${revoked.ms} ms after the revoke and ${disabled.ms} ms after the disable, accepted it ${enabled.ms} ms after the enable (bound ${BOUND_MS} ms), never flapping back`,
  });
  if (failures.length) console.error(c.tails(20));
  expect(failures).toEqual([]);
});
