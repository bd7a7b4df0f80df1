/**
 * A Redis that comes back without its data mid-batch (docs/batches.md "Crash safety"; issue 38 item 1: the batch never
 * ended and its lines' money stayed reserved). The workers' `resume-batches` maintenance job adds again the driver's job
 * of every batch that has not ended (and the job of every chunk at a provider's batch API not done); the reaper fails the
 * lines whose jobs were lost (503, released), and the driver orders them again. The shared test Redis is never flushed:
 * deleting the stack's prefix is the wipe. Fault case 31 does the same to real processes, both paths.
 */
import request from 'supertest';
import { deleteKeys } from '../../shared/queue/redis';
import { batchResumer } from '../../workers/processors/resume-batches.processor';
import { stuckGenerationReaper } from '../../workers/processors/reap-stuck-generations.processor';
import { chargesOf, chatLines, linesOf, newChatBatch } from '../helpers/batch-driving';
import { createTestStack, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';

let s: TestStack;

beforeAll(async () => {
  s = await createTestStack({ env: { BATCH_POLL_MS: '50' } });
});
afterAll(() => s.close());

it('a batch whose driver and line jobs Redis lost is driven again from PostgreSQL and completes: every line answered once, charged once, nothing reserved', async () => {
  const text = s.ctx.queues.text;
  const drivers = s.ctx.queues.batches;
  await text.pause();
  const { id, auth, organizationId } = await newChatBatch(s, chatLines(3, 'wiped'));
  const suffix = id.slice('batch_'.length);
  // The lines ordered, their jobs waiting (no worker takes them): then Redis loses everything. A line is recorded before
  // its job is added, so the wait is for the jobs themselves (a job added after the wipe's scan passed would survive it).
  await waitUntil(async () => {
    const lines = await s.t.db.generation.findMany({ where: { id: { contains: `_${suffix}l` }, status: 'pending' }, select: { id: true } });
    if (lines.length !== 3) return undefined;
    const states = await Promise.all(lines.map((g) => text.getJobState(g.id)));
    return states.every((state) => state !== 'unknown') ? true : undefined;
  }, 10_000);
  await deleteKeys(s.ctx.redis, `${s.ctx.config.queuePrefix}*`);
  // A run of the driver active at the wipe stops once it can no longer move its job (within its 5 s budget).
  await waitUntil(async () => ((await drivers.getJobState(id)) === 'unknown' ? true : undefined), 15_000);

  const resume = batchResumer(s.workerDeps);
  expect(await resume()).toEqual({ drivers: 1, chunks: 0 });
  expect(await resume()).toEqual({ drivers: 0, chunks: 0 });
  // The reaper fails the lines whose jobs were lost (their generations old enough on its clock): 503, released.
  const reap = stuckGenerationReaper({ ...s.workerDeps, clock: () => new Date(Date.now() + 60_000) }, { everyMs: 1_000, minAgeMs: 1_000 });
  expect((await reap()).reaped).toBe(3);

  const b = await waitUntil(async () => {
    const got = (await request(s.app).get(`/v1/batches/${id}`).set(auth)).body;
    return got.status === 'completed' ? got : undefined;
  }, 30_000);
  expect(b.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
  expect(await linesOf(s, auth, b.error_file_id)).toEqual([]);
  const out = await linesOf(s, auth, b.output_file_id);
  expect(out.map((l) => [l.custom_id, l.response.request_id]).sort()).toEqual([0, 1, 2].map((i) => [`wiped-${i}`, `gen_${suffix}l${i + 1}t2`]));
  const { charges } = await chargesOf(s, organizationId, id);
  expect(charges.map((c) => c.generationId).sort()).toEqual(out.map((l) => l.response.request_id).sort());
  const org = await s.t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
  expect(org.reserved.toString()).toBe('0');
  expect(await resume()).toEqual({ drivers: 0, chunks: 0 });
});
