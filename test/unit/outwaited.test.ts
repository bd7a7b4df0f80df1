import { outwaited } from '../../api/services/text-replies';
import { GenerationGateway } from '../../api/services/generation-gateway';
import type { FinalMessage, Submission } from '../../api/services/generation-order';
import { Mailbox } from '../../shared/queue/generation-bus';
import { QUEUES } from '../../shared/queue/queue-names';
import { money } from '../../shared/money';

/**
 * A synchronous wait that ran out, and the cancel that follows finds the generation ended by its worker first
 * (api/services/text-replies.ts `outwaited`). Its final message may never come: published while Redis was away
 * (fault case 2: a request in flight at Redis's restart waited STOP_GRACE_MS more for it). The record the cancel found
 * ended answers at once; the mailbox is waited on only when the record shows no answer.
 */
function submission(): Submission {
  return { id: 'gen_outwaited', queue: QUEUES.text, granted: money('1'), mailbox: new Mailbox(), detach: () => {} };
}

/** The gateway's two calls outwaited makes: a cancel that finds the generation ended, and a wait for its final message. */
function endedFirst(waited: string[]): GenerationGateway {
  return {
    cancel: async () => false,
    // The message was lost: a wait for it would last its whole grace.
    waitFinal: (sub: Submission) => {
      waited.push(sub.id);
      return new Promise<never>(() => {});
    },
  } as unknown as GenerationGateway;
}

const done: FinalMessage = { type: 'done', payload: { cost: '0.25' }, id: 'gen_outwaited', seq: 0 } as unknown as FinalMessage;

it('answers from the record the cancel found ended, without waiting for a final message', async () => {
  const waited: string[] = [];
  expect(await outwaited(endedFirst(waited), submission(), { goesOn: false, reread: async () => done })).toBe(done);
  expect(waited).toEqual([]);
});

it('waits for the final message when the record shows no answer (a failure, or nothing kept)', async () => {
  const failed: FinalMessage = { type: 'failed', error: { code: 'BAD_GATEWAY', message: 'upstream' }, id: 'gen_outwaited', seq: 1 } as unknown as FinalMessage;
  const gateway = { cancel: async () => false, waitFinal: async () => failed } as unknown as GenerationGateway;
  expect(await outwaited(gateway, submission(), { goesOn: false, reread: async () => null })).toBe(failed);
});

/**
 * A stream whose wait ran out as its first deltas came: the cancel finds the generation ended by its worker, which
 * charged for them (failed mid-stream here, or done). The deltas waiting in the mailbox go to the client before that
 * final message, so it sees what its cost is for; stopped for a wait that ran out after content, the same.
 */
describe.each([false, true])('a stream outwaited (content already sent: %s)', (produced) => {
  it('relays the deltas that came before the final message, in order', async () => {
    const sub = submission();
    const delta = (text: string, seq: number) => ({ type: 'delta', event: { type: 'text_delta', text }, id: sub.id, seq }) as const;
    const failed = { type: 'failed', error: { code: 'BAD_GATEWAY', message: 'cut' }, payload: { cost: '0.01' }, id: sub.id, seq: 4 } as unknown as FinalMessage;
    for (const m of [{ type: 'started', endpoint: 'e', model: 'm', id: sub.id, seq: 1 }, delta('one ', 2), delta('two', 3), failed]) sub.mailbox!.put(m as never);
    const gateway = { cancel: async () => false, stop: async () => undefined, waitFinal: GenerationGateway.prototype.waitFinal } as unknown as GenerationGateway;
    const relayed: string[] = [];
    const final = await outwaited(gateway, sub, { goesOn: false, produced, onDelta: (ev) => relayed.push((ev as { text: string }).text) });
    expect(final).toBe(failed);
    expect(relayed).toEqual(['one ', 'two']);
  });
});
