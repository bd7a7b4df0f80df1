import type { Batch, Generation } from '../../shared/db/generated/client';
import { AppError } from '../../shared/errors/app-error';
import { money, ZERO, type Decimal } from '../../shared/money';
import { lineError, type BatchLineKind } from './batch-lines';

/** A line's answer, as its output or error file line, and what its generation was charged. */
export interface Answer {
  ok: boolean;
  expired?: boolean;
  json: string;
  cost: Decimal;
}

/** A line as its answer names it. */
export interface AnsweredLine {
  line: number;
  customId: string;
}

const suffixOf = (batchId: string) => batchId.slice('batch_'.length);
const lineRequestId = (batchId: string, line: number) => `batch_req_${suffixOf(batchId)}l${line}`;

/**
 * A line's generation id, derived from the batch, the line and its try (a line tried again after a transient failure
 * orders a generation of its own; the first try has no suffix): a re-run of the driver finds the same.
 */
export function lineGenerationId(batchId: string, prefix: string, line: number, attempt = 1): string {
  return `${prefix}_${suffixOf(batchId)}l${line}${attempt > 1 ? `t${attempt}` : ''}`;
}

/** The answer of a line whose generation ended: its output line when it completed, else its error line. */
export async function answerOf(b: Pick<Batch, 'id' | 'traceId' | 'completionWindow'>, kind: BatchLineKind, l: AnsweredLine, g: Generation, expired: boolean): Promise<Answer> {
  const cost = money(g.clientCost);
  if (g.status === 'completed') {
    const body = await kind.answer(g);
    return { ok: true, cost, json: JSON.stringify({ id: lineRequestId(b.id, l.line), custom_id: l.customId, response: { status_code: 200, request_id: g.id, body }, error: null }) };
  }
  if (g.status === 'cancelled' && expired) return { ...expiredAnswer(b, l, g.id), cost };
  return { ...errorAnswer(b, l, lineError(g), g.id), cost };
}

/** An error line: the status code and our error envelope, as the call would have answered. */
export function errorAnswer(b: Pick<Batch, 'id' | 'traceId'>, l: AnsweredLine, e: AppError, requestId: string | null): Answer {
  const json = JSON.stringify({ id: lineRequestId(b.id, l.line), custom_id: l.customId, response: { status_code: e.status, request_id: requestId, body: e.toBody(b.traceId ?? b.id) }, error: null });
  return { ok: false, cost: ZERO, json };
}

/** A line not done within the batch's completion window. */
export function expiredAnswer(b: Pick<Batch, 'id' | 'traceId' | 'completionWindow'>, l: AnsweredLine, requestId: string | null = null): Answer {
  const e = new AppError('batch_expired', `This line was not done within the batch's completion window (${b.completionWindow})`);
  const json = JSON.stringify({ id: lineRequestId(b.id, l.line), custom_id: l.customId, response: { status_code: e.status, request_id: requestId, body: e.toBody(b.traceId ?? b.id) }, error: { code: 'batch_expired', message: e.message } });
  return { ok: false, expired: true, cost: ZERO, json };
}
