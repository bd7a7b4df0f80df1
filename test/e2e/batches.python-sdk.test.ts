/**
 * The Batch API with the official Python `openai` SDK (docs/batches.md): a batch created, polled, listed, downloaded,
 * and another cancelled, with the money checked against the ledger. The SDK runs in the cached virtualenv of
 * test/helpers/python-venv.ts; where it cannot be installed, the test is skipped with the reason printed.
 */
import path from 'node:path';
import { money, ZERO } from '../../shared/money';
import { moneyJson } from '../../shared/formats/format-utils';
import { pythonVenv } from '../helpers/python-venv';
import { runProcess } from '../helpers/run-process';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

const venv = pythonVenv();
if (!venv.ok) console.warn(`batches.python-sdk.test.ts skipped: ${venv.reason}`);
const describeIfPython = venv.ok ? describe : describe.skip;

let s: TestStack;
let org: StackOrg;

describeIfPython('the Batch API with the official Python openai SDK', () => {
  beforeAll(async () => {
    // Each upstream call takes 100 ms, with 4 lines in flight: the second batch is still running when it is cancelled.
    s = await createTestStack({ env: { BATCH_POLL_MS: '50', BATCH_LINES_IN_FLIGHT: '4' }, knobs: { latencyMs: 100 } });
    org = await s.seed({ balance: '100' });
  });
  afterAll(() => s?.close());

  it('creates, polls, lists, downloads and cancels batches', async () => {
    if (!venv.ok) return;
    const r = await runProcess(venv.python, [path.join(__dirname, 'python', 'openai_batch_check.py')], {
      env: { ...process.env, SWITCHYARD_BASE_URL: `${s.url}/v1`, SWITCHYARD_API_KEY: org.key.key, CHAT_MODEL: STACK_MODELS.chat },
    });
    if (r.code !== 0) throw new Error(`the Python script failed (${r.code}):\n${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');

    expect(out.file).toMatchObject({ object: 'file', purpose: 'batch', filename: 'input.jsonl' });
    expect(out.created).toMatchObject({ status: 'validating', metadata: { from: 'python' } });
    expect(out.batch).toMatchObject({ status: 'completed', request_counts: { total: 5, completed: 5, failed: 0 }, error_file_id: null });
    expect(out.batch.lines.map((l: { custom_id: string }) => l.custom_id).sort()).toEqual(['py-0', 'py-1', 'py-2', 'py-3', 'py-4']);
    for (const l of out.batch.lines) expect(l.response).toMatchObject({ status_code: 200, body: { object: 'chat.completion' } });
    expect(out.listed).toContain(out.created.id);

    await s.settled(org.organizationId);
    const ids = out.batch.lines.map((l: { response: { request_id: string } }) => l.response.request_id);
    const charges = await s.t.db.ledgerEntry.findMany({ where: { generationId: { in: ids }, kind: 'charge' } });
    const charged = charges.reduce((a, e) => a.plus(money(e.amount).abs()), ZERO);
    expect(charged.greaterThan(0)).toBe(true);
    expect(out.batch.cost_rub).toBe(moneyJson(charged.toFixed(10)));

    expect(out.cancelled).toMatchObject({ status: 'cancelled' });
    expect(['cancelling', 'cancelled']).toContain(out.cancelled.first_status);
    const c = out.cancelled.request_counts;
    expect(c.total).toBe(100);
    expect(c.completed + c.failed).toBeLessThan(100);
    const row = await s.t.db.batch.findUniqueOrThrow({ where: { id: out.cancelled.id } });
    const gens = await s.t.db.generation.count({ where: { id: { contains: `_${row.id.slice('batch_'.length)}l` } } });
    expect(gens).toBe(c.completed + c.failed);
  }, 120_000);
});
