import type { SettlementJournal } from '../../shared/billing/settlement-journal';
import type { Db } from '../../shared/db/client';
import type { Generation, Prisma } from '../../shared/db/generated/client';
import { AppError, type StoredError } from '../../shared/errors/app-error';
import { buildResponseObject, INCOMPLETE_REASONS, type PublicError, type ResponseObject, type ResponseStatus } from '../../shared/formats/response-object.mapper';
import { publicUsage } from '../../shared/formats/format-utils';
import { withoutText } from '../../shared/formats/unstored-text';
import type { InputItem, OutputItem, TextResult } from '../../shared/providers/provider.types';
import type { ResponsesBody } from '../../shared/schemas/responses.schema';
import type { TextDonePayload } from '../../shared/queue/job-catalog';
import type { Principal } from '../../shared/auth/principal';
import { RUNNING } from '../../shared/services/generation.service';
import { generationById } from '../../shared/db/generation-reads';
import { parametersIgnored } from '../../shared/routing/route-parameters';
import { itemReferenceIds, responsesToCanonical } from '../../shared/formats/responses-request.mapper';
import { textRouting, type TextService, type TextSubmitted } from './text.service';
import type { Caller } from './generation-order';
import type { PlannedRoute } from './route-planner';

/** What a responses generation keeps in its `request` column: the body (echo fields) and the whole conversation. */
export interface StoredResponsesRequest {
  body: ResponsesBody;
  /** The conversation sent to the provider: the stored history of `previous_response_id`, then this turn's input. */
  input: InputItem[];
  /** Where this turn's own input starts in `input` (what GET .../input_items lists); absent means 0. */
  inputStart?: number;
  /** Set when the caller deleted the response (DELETE /v1/responses/{id}): its text is gone, the record stays. */
  deleted?: boolean;
}

export const storedRequest = (g: Generation) => g.request as unknown as StoredResponsesRequest;

/** The response's own texts are kept (not `store: false`, not deleted, not erased by CONTENT_RETENTION_DAYS). */
export function isStored(g: Generation): boolean {
  const r = storedRequest(g);
  return r !== null && r.body.store !== false && r.deleted !== true;
}

/**
 * A response whose content the retention erased (CONTENT_RETENTION_DAYS, docs/decisions.md "History"): its record
 * is in the history, its texts are gone. Null when the content is there.
 */
function erased(g: Generation | null, what: string): AppError | null {
  if (!g || g.request !== null) return null;
  return new AppError('NOT_FOUND', `${what} ${g.id} is no longer stored: its input and output were erased after the content retention period (CONTENT_RETENTION_DAYS); its usage and cost stay at GET /v1/history/generations/${g.id}`);
}

const STATUS: Record<Generation['status'], ResponseStatus> = {
  pending: 'queued',
  processing: 'in_progress',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** OpenAI answers `incomplete` (not `completed`) for an answer cut by max_output_tokens or a content filter. */
export const finishedStatus = (result: TextResult | undefined): 'completed' | 'incomplete' => (result && INCOMPLETE_REASONS.has(result.finishReason) ? 'incomplete' : 'completed');

export const unix = (d: Date) => Math.floor(d.getTime() / 1000);

export function usageOf(p: TextDonePayload) {
  return publicUsage(p.result.usage, { totalRub: p.cost, inferenceRub: p.cost }, p.plugins ? { plugins: p.plugins } : undefined);
}

export function publicError(e: StoredError): PublicError {
  return { code: e.code, message: e.message, metadata: e.metadata };
}

/** A stored response as the Response object (GET /v1/responses/{id}, cancel). */
export function responseObjectOf(g: Generation): ResponseObject {
  const record = storedRequest(g);
  const payload = g.result as unknown as TextDonePayload | null;
  const result = payload ? withPublicIds(g.id, payload.result) : undefined;
  return buildResponseObject({
    id: g.id,
    createdAt: unix(g.createdAt),
    completedAt: g.completedAt ? unix(g.completedAt) : null,
    model: payload?.model ?? g.model,
    status: g.status === 'completed' ? finishedStatus(result) : STATUS[g.status],
    result,
    usage: payload ? usageOf(payload) : null,
    request: record.body,
    error: g.error ? publicError(g.error as unknown as StoredError) : null,
    warnings: (g.warnings as string[] | null) ?? undefined,
  });
}

/** Whether a generation has ended (any way). */
export const hasEnded = (g: Pick<Generation, 'status'>) => !RUNNING.has(g.status);

/** What a `store: false` (or deleted) response's record keeps of its body: the routing and limits, no text. */
export function unstoredBody(body: ResponsesBody): ResponsesBody {
  const { model, models, provider, stream, background, max_output_tokens, store } = body;
  return { model, models, provider, stream, background, max_output_tokens, store };
}

type ItemPrefix = 'msg' | 'fc' | 'rs' | 'fco';
const OUTPUT_PREFIX: Record<OutputItem['type'], ItemPrefix> = { message: 'msg', function_call: 'fc', reasoning: 'rs' };
const INPUT_PREFIX: Record<InputItem['type'], ItemPrefix> = { message: 'msg', function_call: 'fc', function_call_output: 'fco', reasoning: 'rs' };

/**
 * Public item ids name their response and position, so an `item_reference` leads straight to its stored response:
 * the n-th output item of a kind in `resp_X` is `<prefix>_X_<n>` (the ids the stream formatter gives too: counting
 * per kind keeps them equal however text and calls interleaved in the stream), input item n is `<prefix>_X_in<n>`.
 * Response ids are `resp_` + base62, so the parts never run into each other.
 */
const ITEM_ID = /^(msg|fc|rs|fco)_([A-Za-z0-9]+)_(in)?(\d{1,6})$/;
const suffixOf = (responseId: string) => responseId.replace(/^resp_/, '');


export const inputItemId = (responseId: string, item: InputItem, index: number) => `${INPUT_PREFIX[item.type]}_${suffixOf(responseId)}_in${index}`;

/** The result with the public ids of its output items (providers' own ids are neither unique nor stable). */
export function withPublicIds(responseId: string, result: TextResult): TextResult {
  const perKind: Record<string, number> = {};
  const id = (o: OutputItem) => `${OUTPUT_PREFIX[o.type]}_${suffixOf(responseId)}_${(perKind[o.type] = (perKind[o.type] ?? -1) + 1)}`;
  return { ...result, output: result.output.map((o) => ({ ...o, id: id(o) })) };
}

/**
 * The output items of a stored response as input items of the next turn. Reasoning goes on only with its encrypted
 * reasoning (asked for with `include`): the provider can take its earlier reasoning back only so, since nothing is
 * stored upstream (`store: false`).
 */
export function asInput(output: readonly OutputItem[]): InputItem[] {
  return output.flatMap((o): InputItem[] => {
    if (o.type === 'message') return [{ type: 'message', role: 'assistant', content: o.content.map((c) => ({ type: 'output_text', text: c.text })) }];
    if (o.type === 'function_call') return [{ type: 'function_call', call_id: o.call_id, name: o.name, arguments: o.arguments }];
    return o.encrypted_content === undefined ? [] : [{ type: 'reasoning', summary: o.summary, encrypted_content: o.encrypted_content }];
  });
}

/** This turn's own input items (without the history of previous_response_id), with their public ids. */
export function turnInput(g: Generation): Array<{ id: string; item: InputItem }> {
  const r = storedRequest(g);
  const start = r.inputStart ?? 0;
  return r.input.slice(start).map((item, i) => ({ id: inputItemId(g.id, item, i), item }));
}

/** A stored response's items by public id, as the next turn's input: its turn's input items, its output items. */
interface StoredItems {
  input: Map<string, InputItem[]>;
  /** Empty unless it completed. */
  output: Map<string, InputItem[]>;
}

function storedItems(g: Generation | null): StoredItems | null {
  if (!g || !isStored(g)) return null;
  const input = new Map(turnInput(g).map((t) => [t.id, [t.item]]));
  const payload = g.result as unknown as TextDonePayload | null;
  const output = g.status === 'completed' && payload ? new Map(withPublicIds(g.id, payload.result).output.map((o) => [o.id, asInput([o])])) : new Map<string, InputItem[]>();
  return { input, output };
}

/**
 * Stored responses as a principal may see them, scoped exactly as media and history are: an API key sees its own;
 * a personal-account token the whole organization (owner, admin) or its own (member: its keys' and key-less).
 * Everything else does not exist for the caller.
 */
export class StoredResponses {
  constructor(
    private readonly db: Db,
    /** A response replied to but not yet settled is waited for (settlement-journal.ts): its reader sees it completed. */
    private readonly settlements?: SettlementJournal,
  ) {}

  async find(principal: Principal, id: string): Promise<Generation | null> {
    const g = await this.lookup(principal, id);
    if ((g && hasEnded(g)) || !this.settlements) return g;
    // Running and promised, or not recorded yet but promised (granted from a lease: the promise carries its record).
    // Read again either way: a promise erased between the read above and this wait was kept (its close committed),
    // so the first read is stale (a previous_response_id answered 409 "has not completed" so).
    await this.settlements.waitSettled(principal.organizationId, { generationIds: [id] });
    return this.lookup(principal, id);
  }

  private lookup(principal: Principal, id: string): Promise<Generation | null> {
    return generationById(this.db, id, (key) => this.db.generation.findFirst({
      where: {
        ...key,
        apiType: 'responses',
        organizationId: principal.organizationId,
        ...(principal.kind === 'key' ? { apiKeyId: principal.keyId } : principal.role === 'member' ? { userId: principal.userId } : {}),
      },
    }));
  }

  /** A response's record as it is now (after a cancel: how it ended). */
  async reread(id: string): Promise<Generation> {
    const g = await generationById(this.db, id, (where) => this.db.generation.findFirst({ where }));
    if (!g) throw new Error(`response ${id} is not recorded`);
    return g;
  }

  /**
   * Deletes a response's texts (DELETE /v1/responses/{id}; cancel a running one first, so no later ending writes its
   * text back): the record stays for billing and history; the conversation and the answer's text go.
   */
  async erase(id: string): Promise<void> {
    const now = await this.reread(id);
    const record: StoredResponsesRequest = { body: unstoredBody(storedRequest(now).body), input: [], deleted: true };
    const payload = now.result as unknown as TextDonePayload | null;
    await this.db.generation.updateMany({
      where: { id, createdAt: now.createdAt },
      data: {
        request: record as unknown as Prisma.InputJsonValue,
        ...(payload && { result: { ...payload, result: withoutText(payload.result) } as unknown as Prisma.InputJsonValue }),
      },
    });
  }

  /** A response whose texts are kept, or 404. */
  async get(principal: Principal, id: string): Promise<Generation> {
    const g = await this.find(principal, id);
    const gone = erased(g, 'Response');
    if (gone) throw gone;
    if (!g || !isStored(g)) throw new AppError('NOT_FOUND', `Response ${id} not found`);
    return g;
  }

  /** The conversation so far of `previous_response_id`: its input and output items. */
  async history(principal: Principal, id: string): Promise<InputItem[]> {
    const prev = await this.find(principal, id);
    const gone = erased(prev, 'Previous response');
    if (gone) throw gone;
    if (!prev || !isStored(prev)) throw new AppError('NOT_FOUND', `Previous response ${id} not found`);
    if (prev.status !== 'completed') throw new AppError('CONFLICT', `Previous response ${id} has not completed (status ${prev.status})`);
    return [...storedRequest(prev).input, ...asInput((prev.result as unknown as TextDonePayload).result.output)];
  }

  /**
   * What each `item_reference` id stands for: an output item (or an input item) of a stored response the caller
   * may see. An id that names nothing the caller may see is a 400 naming it (OpenAI answers 400 too).
   */
  async resolve(principal: Principal, ids: readonly string[]): Promise<Map<string, InputItem[]>> {
    const out = new Map<string, InputItem[]>();
    // Each response's items are listed once, not once per reference to it: a request may name thousands.
    const responses = new Map<string, StoredItems | null>();
    for (const id of ids) {
      const m = ITEM_ID.exec(id);
      const notFound = () => AppError.validation([{ path: '/input', message: `no stored item '${id}'` }], `Item reference '${id}' not found`);
      if (!m) throw notFound();
      const responseId = `resp_${m[2]}`;
      if (!responses.has(responseId)) responses.set(responseId, storedItems(await this.find(principal, responseId)));
      const found = responses.get(responseId)?.[m[3] ? 'input' : 'output'].get(id);
      if (!found) throw notFound();
      out.set(id, found);
    }
    return out;
  }
}

const withoutReasoning = ({ reasoning: _reasoning, ...rest }: ResponsesBody): ResponsesBody => rest;

/**
 * A validated Responses API body as a text generation: its conversation (the previous response's turns, the item
 * references) mapped, routed, reserved and enqueued. POST /v1/responses (sync, stream, background) and a batch's
 * `/v1/responses` lines both order theirs here. `record` is what the generation keeps of the request.
 */
export async function orderResponse(
  d: { text: TextService; stored: StoredResponses },
  c: Caller,
  body: ResponsesBody,
  o: { id: string; mode: 'sync' | 'stream' | 'async' | 'batch' },
): Promise<TextSubmitted & { record: (route: PlannedRoute) => StoredResponsesRequest }> {
  const prior = body.previous_response_id ? await d.stored.history(c.principal, body.previous_response_id) : [];
  const referenced = itemReferenceIds(body.input);
  const references = referenced.length > 0 ? await d.stored.resolve(c.principal, referenced) : undefined;
  const { requestedParameters, warnings: formatWarnings, ...request } = responsesToCanonical(body, prior, references);
  // `store: false`: the record keeps what billing and history need, not the conversation (nor the instructions).
  // A reasoning effort no endpoint of the model takes is dropped with a warning, and not echoed either.
  const record = (route: PlannedRoute): StoredResponsesRequest => {
    const kept = parametersIgnored(route.plan).includes('reasoning') ? withoutReasoning(body) : body;
    return body.store === false ? { body: unstoredBody(kept), input: [] } : { body: kept, input: request.input, inputStart: prior.length };
  };
  const submitted = await d.text.submit({
    id: o.id,
    ...c,
    ...textRouting(body),
    apiType: 'responses',
    mode: o.mode,
    request,
    requestedParameters,
    warnings: formatWarnings,
    record,
    previousResponseId: body.previous_response_id ?? undefined,
    store: body.store !== false,
  });
  return { ...submitted, record };
}
