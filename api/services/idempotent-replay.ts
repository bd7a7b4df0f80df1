import { AppError, type StoredError } from '../../shared/errors/app-error';
import type { QueueName } from '../../shared/queue/queue-names';
import { RUNNING, type GenerationService, type GenerationState, type NewGeneration } from '../../shared/services/generation.service';
import { ZERO } from '../../shared/money';
import { Mailbox } from '../../shared/queue/generation-bus';
import type { SettlementJournal } from '../../shared/billing/settlement-journal';
import type { Submission } from './generation-order';

/** How often a repeated request reads the state of the generation it attached to. */
const REPLAY_POLL_MS = 150;

/**
 * A repeated request (same Idempotency-Key, same body) joins the generation the first one made. Its worker
 * replies to the first request's API process, so the repeat reads the generation's state from the database
 * until it ends and hands the outcome to the route like a worker message: a finished generation is replayed
 * from what it stored, a running one is waited for. A stream cannot join one that is still streaming (its
 * earlier deltas went to the first client): 409. Like any read, it first waits for the generation's promised
 * settlement (the first request's reply may have gone out on it).
 */
export async function attach(generations: Pick<GenerationService, 'state'>, settlements: Pick<SettlementJournal, 'waitSettled'>, id: string, queue: QueueName, gen: NewGeneration, listen: boolean): Promise<Submission> {
  await settlements.waitSettled(gen.organizationId, { generationIds: [id] });
  const first = await generations.state(id);
  // Both 409s below pass once the first request has gone further: the SDKs may repeat them (x-should-retry).
  if (!first) throw new AppError('CONFLICT', `The first request with this Idempotency-Key is still being accepted: repeat in a moment`, { metadata: { generation_id: id }, retry: true });
  if (gen.responseMode === 'stream' && RUNNING.has(first.status)) {
    throw new AppError('CONFLICT', `Generation ${id} of this Idempotency-Key is still streaming to the first request: repeat once it has ended to replay it`, {
      metadata: { generation_id: id },
      retry: true,
    });
  }
  const base = { id, queue, granted: ZERO, keyed: true, replayed: true, createdAt: first.createdAt };
  if (!listen) return { ...base, detach: () => {} };
  const mailbox = new Mailbox();
  let stopped = false;
  const deliver = (g: GenerationState): boolean => {
    if (RUNNING.has(g.status)) return false;
    if (g.status === 'completed') mailbox.put({ type: 'done', payload: g.result, id, seq: 1 });
    else if (g.status === 'failed') mailbox.put({ type: 'failed', error: g.error as unknown as StoredError, id, seq: 1 });
    else mailbox.put({ type: 'cancelled', ...(g.result ? { payload: g.result } : {}), id, seq: 1 });
    return true;
  };
  if (!deliver(first)) {
    void (async () => {
      while (!stopped) {
        await new Promise((r) => setTimeout(r, REPLAY_POLL_MS));
        if (stopped) return;
        const g = await generations.state(id).catch(() => null);
        if (g && deliver(g)) return;
      }
    })();
  }
  return { ...base, mailbox, detach: () => void (stopped = true) };
}
