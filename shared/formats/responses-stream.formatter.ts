/**
 * Canonical stream events → the Responses API's Server-Sent Events
 * (https://platform.openai.com/docs/api-reference/responses-streaming), in the order the OpenAI SDK's
 * accumulator expects: an item is added before its parts, a part before its deltas, and `done` events close
 * them. Stateful but pure (no clock, no randomness: item ids come from `newId`, deterministic by default).
 *
 * Reasoning deltas become a `reasoning` item with one summary part (`response.reasoning_summary_*` events); a
 * `reasoning_end` closes it with its encrypted reasoning (`response.output_item.done`, as OpenAI sends it), or is a
 * reasoning item of its own when no summary came. Function-call items stay open until `complete()`, so calls whose
 * argument deltas interleave stay valid; a message or reasoning item closes when the next item opens.
 */
import type { OutputItem, TextResult, TextStreamEvent, TokenLogprob } from '../providers/provider.types';
import { publicLogprobs, type PublicUsage } from './format-utils';
import {
  INCOMPLETE_REASONS,
  outputTextPart,
  responseEnvelope,
  type ItemStatus,
  type PublicError,
  type PublicOutputItem,
  type ResponseObjectInput,
} from './response-object.mapper';

export interface SseEvent {
  event: string;
  data: { type: string; sequence_number: number; [key: string]: unknown };
}

export type ItemIdPrefix = 'msg' | 'fc' | 'rs';

export type ResponsesStreamBase = Omit<ResponseObjectInput, 'result' | 'usage' | 'status'> & {
  /**
   * Ids of streamed output items; default `<prefix>_<response id without resp_>_<n>`, n counting the items of that
   * kind (so the ids do not depend on how kinds interleave, and a stored result gives each item the same id).
   */
  newId?: (prefix: ItemIdPrefix, outputIndex: number) => string;
};

export interface ResponsesStreamFinal {
  result: TextResult;
  usage: PublicUsage | Record<string, unknown>;
  /** Public model id that answered. */
  model: string;
  completedAt?: number;
  /** `incomplete` ends with `response.incomplete` (OpenAI's event for a cut answer); default `completed`. */
  status?: 'completed' | 'incomplete';
}

export interface ResponsesStreamFormatter {
  start(): SseEvent[];
  push(event: TextStreamEvent): SseEvent[];
  complete(final: ResponsesStreamFinal): SseEvent[];
  fail(error: PublicError, partial?: { usage?: PublicUsage | Record<string, unknown>; model?: string }): SseEvent[];
  /** What `finish` and `usage` events reported, for the caller's bookkeeping. */
  readonly reported: { finishReason?: TextResult['finishReason']; usage?: TextResult['usage'] };
}

interface StreamItem {
  kind: OutputItem['type'];
  id: string;
  outputIndex: number;
  /** Message text, reasoning summary or call arguments so far. */
  text: string;
  /** A reasoning item's summary part was announced (`response.reasoning_summary_part.added`). */
  summarised?: boolean;
  /** A reasoning item's encrypted reasoning. */
  encrypted?: string;
  callId: string;
  name: string;
  open: boolean;
  matched: boolean;
  logprobs?: readonly TokenLogprob[];
}

export function createResponsesStreamFormatter(base: ResponsesStreamBase): ResponsesStreamFormatter {
  const idSuffix = base.id.replace(/^resp_/, '');
  const perKind: Record<ItemIdPrefix, number> = { msg: 0, fc: 0, rs: 0 };
  const items: StreamItem[] = [];
  const byToolIndex = new Map<number, StreamItem>();
  const reported: ResponsesStreamFormatter['reported'] = {};
  let sequence = 0;
  let started = false;
  let ended = false;
  /** The open message or reasoning item that text deltas extend. */
  let current: StreamItem | undefined;

  const ev = (type: string, fields: Record<string, unknown>): SseEvent => ({
    event: type,
    data: { type, ...fields, sequence_number: sequence++ },
  });

  function start(): SseEvent[] {
    if (started) return [];
    started = true;
    const response = responseEnvelope(base, 'in_progress', []);
    return [ev('response.created', { response }), ev('response.in_progress', { response })];
  }

  function publicItem(item: StreamItem, status: ItemStatus): PublicOutputItem {
    switch (item.kind) {
      case 'message':
        return { type: 'message', id: item.id, status, role: 'assistant', content: [outputTextPart(item.text, item.logprobs)] };
      case 'function_call':
        return { type: 'function_call', id: item.id, call_id: item.callId, name: item.name, arguments: item.text, status };
      case 'reasoning':
        return {
          type: 'reasoning',
          id: item.id,
          summary: item.summarised || item.text ? [{ type: 'summary_text', text: item.text }] : [],
          status,
          ...(item.encrypted !== undefined && { encrypted_content: item.encrypted }),
        };
    }
  }

  function open(kind: StreamItem['kind'], fields: Partial<StreamItem> = {}): { item: StreamItem; events: SseEvent[] } {
    // The open message or reasoning item ends where another item begins.
    const events = current ? close(current) : [];
    const outputIndex = items.length;
    const prefix: ItemIdPrefix = kind === 'message' ? 'msg' : kind === 'function_call' ? 'fc' : 'rs';
    const id = base.newId ? base.newId(prefix, outputIndex) : `${prefix}_${idSuffix}_${perKind[prefix]++}`;
    const item: StreamItem = { kind, id, outputIndex, text: '', callId: '', name: '', open: true, matched: false, ...fields };
    items.push(item);
    const added: PublicOutputItem =
      kind === 'message'
        ? { type: 'message', id: item.id, status: 'in_progress', role: 'assistant', content: [] }
        : kind === 'function_call'
          ? { type: 'function_call', id: item.id, call_id: item.callId, name: item.name, arguments: '', status: 'in_progress' }
          : { type: 'reasoning', id: item.id, summary: [], status: 'in_progress' };
    events.push(ev('response.output_item.added', { output_index: outputIndex, item: added }));
    const at = { item_id: item.id, output_index: outputIndex };
    if (kind === 'message') events.push(ev('response.content_part.added', { ...at, content_index: 0, part: outputTextPart('') }));
    if (kind !== 'function_call') current = item;
    return { item, events };
  }

  function close(item: StreamItem, status: ItemStatus = 'completed'): SseEvent[] {
    if (!item.open) return [];
    item.open = false;
    if (current === item) current = undefined;
    const at = { item_id: item.id, output_index: item.outputIndex };
    const events: SseEvent[] = [];
    if (item.kind === 'message') {
      const logprobs = item.logprobs ? publicLogprobs(item.logprobs) : [];
      events.push(ev('response.output_text.done', { ...at, content_index: 0, text: item.text, logprobs }));
      events.push(ev('response.content_part.done', { ...at, content_index: 0, part: outputTextPart(item.text, item.logprobs) }));
    } else if (item.kind === 'reasoning') {
      if (item.text && !item.summarised) events.push(...summaryPart(item));
      if (item.summarised) {
        events.push(ev('response.reasoning_summary_text.done', { ...at, summary_index: 0, text: item.text }));
        events.push(ev('response.reasoning_summary_part.done', { ...at, summary_index: 0, part: { type: 'summary_text', text: item.text } }));
      }
    } else {
      events.push(ev('response.function_call_arguments.done', { ...at, name: item.name, arguments: item.text }));
    }
    events.push(ev('response.output_item.done', { output_index: item.outputIndex, item: publicItem(item, status) }));
    return events;
  }

  /** A reasoning item's one summary part opens at its first summary text (an item without a summary has none). */
  function summaryPart(item: StreamItem): SseEvent[] {
    item.summarised = true;
    return [ev('response.reasoning_summary_part.added', { item_id: item.id, output_index: item.outputIndex, summary_index: 0, part: { type: 'summary_text', text: '' } })];
  }

  function push(event: TextStreamEvent): SseEvent[] {
    if (ended) return [];
    const events = start();
    switch (event.type) {
      case 'text_delta':
      case 'reasoning_delta': {
        if (event.text === '') break;
        const kind = event.type === 'text_delta' ? 'message' : 'reasoning';
        let item = current;
        if (!item || item.kind !== kind) {
          const opened = open(kind);
          events.push(...opened.events);
          item = opened.item;
        }
        if (kind === 'reasoning' && !item.summarised) events.push(...summaryPart(item));
        item.text += event.text;
        const at = { item_id: item.id, output_index: item.outputIndex };
        events.push(
          kind === 'message'
            ? ev('response.output_text.delta', { ...at, content_index: 0, delta: event.text, logprobs: [] })
            : ev('response.reasoning_summary_text.delta', { ...at, summary_index: 0, delta: event.text }),
        );
        break;
      }
      case 'reasoning_end': {
        let item = current?.kind === 'reasoning' ? current : undefined;
        if (!item && event.encryptedContent !== undefined) {
          const opened = open('reasoning');
          events.push(...opened.events);
          item = opened.item;
        }
        if (!item) break;
        if (event.encryptedContent !== undefined) item.encrypted = event.encryptedContent;
        events.push(...close(item));
        break;
      }
      case 'tool_call_start': {
        const opened = open('function_call', { callId: event.callId, name: event.name });
        byToolIndex.set(event.index, opened.item);
        events.push(...opened.events);
        break;
      }
      case 'tool_call_delta': {
        const item = byToolIndex.get(event.index);
        // A delta for a call that never started has no item to belong to (the result still carries the call).
        if (!item || !item.open || event.argumentsDelta === '') break;
        item.text += event.argumentsDelta;
        events.push(ev('response.function_call_arguments.delta', { item_id: item.id, output_index: item.outputIndex, delta: event.argumentsDelta }));
        break;
      }
      case 'usage':
        reported.usage = event.usage;
        break;
      case 'finish':
        reported.finishReason = event.finishReason;
        break;
      case 'error':
        // The caller ends the stream with `fail()`.
        break;
    }
    return events;
  }

  function complete(final: ResponsesStreamFinal): SseEvent[] {
    if (ended) return [];
    const events = start();
    // Each result item takes the streamed item it was (same kind, same call id for calls), or a new one.
    const { result } = final;
    let logprobsGiven = false;
    for (const r of result.output) {
      const candidates = items.filter((i) => !i.matched && i.kind === r.type);
      let item =
        r.type === 'function_call' ? (candidates.find((i) => i.callId === r.call_id) ?? candidates[0]) : candidates[0];
      if (!item) {
        const opened = open(r.type, r.type === 'function_call' ? { callId: r.call_id, name: r.name } : {});
        events.push(...opened.events);
        item = opened.item;
      }
      item.matched = true;
      if (r.type === 'message') {
        item.text = r.content.map((c) => c.text).join('');
        if (!logprobsGiven && result.logprobs) item.logprobs = result.logprobs;
        logprobsGiven = true;
      } else if (r.type === 'function_call') {
        Object.assign(item, { callId: r.call_id, name: r.name, text: r.arguments });
      } else {
        item.text = r.summary.map((s) => s.text).join('');
        if (r.encrypted_content !== undefined) item.encrypted = r.encrypted_content;
      }
    }
    const status = final.status ?? 'completed';
    const itemStatus: ItemStatus = status === 'incomplete' ? 'incomplete' : 'completed';
    for (const item of items) events.push(...close(item, item.kind === 'message' ? itemStatus : 'completed'));
    ended = true;
    const output = items.map((i) => publicItem(i, i.kind === 'message' ? itemStatus : 'completed'));
    const reason = INCOMPLETE_REASONS.get(result.finishReason);
    const response = responseEnvelope(
      { ...base, model: final.model, usage: final.usage, completedAt: final.completedAt ?? base.completedAt ?? null, serviceTier: result.serviceTier },
      status,
      output,
      reason ? { reason } : null,
    );
    events.push(ev(status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response }));
    return events;
  }

  function fail(error: PublicError, partial: { usage?: PublicUsage | Record<string, unknown>; model?: string } = {}): SseEvent[] {
    if (ended) return [];
    const events = start();
    ended = true;
    const output = items.map((i) => publicItem(i, i.open ? 'incomplete' : 'completed'));
    const response = responseEnvelope({ ...base, error, usage: partial.usage ?? null, ...(partial.model && { model: partial.model }) }, 'failed', output);
    events.push(ev('response.failed', { response }));
    return events;
  }

  return { start, push, complete, fail, reported };
}

/** One event on the wire. */
export function encodeSse(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
