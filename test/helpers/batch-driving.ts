/**
 * A batch's driver stepped by hand over a test stack (docs/batches.md "How a batch runs"): the stack's own drivers are
 * kept off the batch by pausing the `batches` queue, and the test steps a `BatchDriver` of its own (its kinds, its
 * database or settings changed to set up a race).
 */
import request from 'supertest';
import { BatchDriver, type BatchDriverDeps } from '../../api/services/batch-driver';
import { batchLineKinds } from '../../api/services/batch-lines';
import { createLogger } from '../../shared/logger';
import { money, ZERO } from '../../shared/money';
import { STACK_MODELS, type TestStack } from './test-stack';
import { waitFor } from './until';

/** The line kinds the stack's routes use. */
export const stackKinds = (s: TestStack) => batchLineKinds({ text: s.ctx.text, stored: s.ctx.responses, embeddings: s.ctx.embeddings, images: s.ctx.images });

/** A driver like the API's over the stack, with `over` replacing its deps (its kinds, database, settings, steps). */
export function handDriver(s: TestStack, over: Partial<BatchDriverDeps> = {}): BatchDriver {
  const ctx = s.ctx;
  return new BatchDriver({ db: ctx.db, files: ctx.batchFiles, kinds: stackKinds(s), gateway: ctx.gateway, logger: createLogger({ silent: true }), metrics: ctx.metrics, clock: () => new Date(), settings: ctx.config.batches, ...over });
}

/** `n` chat lines, custom_ids `<tag>-<i>`, with `body` merged over each line's body. */
export function chatLines(n: number, tag: string, body: Record<string, unknown> = { max_tokens: 16 }): object[] {
  return Array.from({ length: n }, (_, i) => ({ custom_id: `${tag}-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: STACK_MODELS.chat, messages: [{ role: 'user', content: `${tag} ${i}` }], ...body } }));
}

/** A chat batch of `lines` by a new organization (its driver's job waits while the caller keeps the `batches` queue paused). */
export async function newChatBatch(s: TestStack, lines: object[], org: { balance?: string; keyLimit?: string } = {}): Promise<{ id: string; auth: Record<string, string>; organizationId: string }> {
  const o = await s.seed({ balance: org.balance ?? '100', keyLimit: org.keyLimit });
  const auth = { Authorization: `Bearer ${o.key.key}` };
  const file = await request(s.app).post('/v1/files').set(auth).field('purpose', 'batch').attach('file', Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n')), 'in.jsonl');
  expect(file.status).toBe(200);
  const created = await request(s.app).post('/v1/batches').set(auth).send({ input_file_id: file.body.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  expect(created.status).toBe(200);
  return { id: created.body.id as string, auth, organizationId: o.organizationId };
}

/** Steps `driver` until the batch has ended, every 25 ms (as the driver's own wait), for up to `timeoutMs`. */
export async function runToEnd(driver: BatchDriver, id: string, timeoutMs = 20_000): Promise<void> {
  await waitFor('the batch to end', async () => !(await driver.step(id)).more, timeoutMs);
}

export interface OutLine {
  custom_id: string;
  response: { status_code: number; request_id: string | null; body: { error?: { code: string; message: string; metadata?: { reason?: string } } } };
}

/** The lines of a batch's output (or error) file. */
export async function linesOf(s: TestStack, auth: Record<string, string>, fileId: string | null): Promise<OutLine[]> {
  if (!fileId) return [];
  return (await request(s.app).get(`/v1/files/${fileId}/content`).set(auth)).text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as OutLine);
}

/** The generations of a batch's lines (every try's) and the charges the ledger made them. */
export async function chargesOf(s: TestStack, organizationId: string, batchId: string) {
  await s.settled(organizationId);
  const gens = await s.t.db.generation.findMany({ where: { id: { contains: `_${batchId.slice('batch_'.length)}l` } }, select: { id: true, status: true, error: true, clientCost: true } });
  const charges = await s.t.db.ledgerEntry.findMany({ where: { generationId: { in: gens.map((g) => g.id) }, kind: 'charge' } });
  return { gens, charges, sum: charges.reduce((a, e) => a.plus(money(e.amount).abs()), ZERO) };
}
