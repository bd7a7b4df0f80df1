import { AppError, type StoredError } from '../../shared/errors/app-error';
import { OUTPUT_TOKENS_CEILING } from '../../shared/schemas/responses.schema';
import type { TextRequest } from '../../shared/providers/provider.types';
import type { ProviderPreferences } from '../../shared/routing/routing.types';
import { newId } from '../../shared/ids';
import { requestedParameters, withReasoningEffort } from '../../shared/formats/format-utils';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../../shared/providers/provider.types';
import { estimateInputTokens, outputTokensFor, tokenCost } from '../../shared/billing/pricing';
import { Decimal, ZERO } from '../../shared/money';
import { tierPrice } from '../../shared/catalog/catalog-index';
import { QUEUES } from '../../shared/queue/queue-names';
import type { TextJobData } from '../../shared/queue/job-catalog';
import type { ApiType, IdempotentRequest, ResponseMode } from '../../shared/services/generation.service';
import type { GenerationGateway } from './generation-gateway';
import type { Submission } from './generation-order';
import type { Principal } from '../../shared/auth/principal';
import type { RequestHandler, Response } from 'express';
import type { Db } from '../../shared/db/client';
import type { TextDonePayload } from '../../shared/queue/job-catalog';
import { awaitText, openEventStream, outwaited, replayEvents, type StreamHandlers } from './text-replies';
import { toAppError } from '../middleware/error-handler';
import type { PlannedRoute, RoutePlanner } from './route-planner';
import { generationById } from '../../shared/db/generation-reads';

/** The least output a text request may be shrunk to when the balance does not cover its full bound. */
const MIN_OUTPUT_TOKENS = 16;

/** The error a cancelled stream ends with; with the cost charged when content had reached the client. */
const CANCELLED: StoredError = { code: 'REQUEST_TIMEOUT', message: 'The generation was cancelled' };

export interface TextSubmit {
  principal: Principal;
  traceId: string;
  /** The request span (tracing on only): Caller.traceparent. */
  traceparent?: string;
  apiType: Extract<ApiType, 'responses' | 'chat_completions' | 'systemone'>;
  mode: ResponseMode;
  model?: string;
  models?: string[];
  provider?: ProviderPreferences;
  request: Omit<TextRequest, 'model'>;
  requestedParameters: string[];
  /** What the request mapper noted (parts accepted without effect): the generation keeps them with the rest. */
  warnings?: string[];
  requireCapabilities?: string[];
  /**
   * What the caller sent, kept on the generation (echo fields, conversations, history); a function of the planned
   * route when it depends on it (a response does not echo a parameter no endpoint takes).
   */
  record: object | ((route: PlannedRoute) => object);
  stickiness?: string;
  previousResponseId?: string;
  /** An id chosen by the caller (responses use `resp_...`). */
  id?: string;
  /** Request plugins (`masker`), run by the worker. */
  plugins?: string[];
  /** `store: false`: the record keeps no text (the worker drops the output's, the job is forgotten once done). */
  store?: boolean;
  /** The request's name for the output limit, for the 400 when it is above the model's (default max_output_tokens). */
  outputLimitField?: string;
  /** The request's Idempotency-Key, when it has one (docs/idempotency.md). */
  idempotency?: IdempotentRequest;
  /** A batch line's batch (Caller.batchId). */
  batchId?: string;
  /** Its whole bound or nothing (Caller.wholeBound). */
  wholeBound?: true;
}

/** The routing fields chat completions and responses share: model or models, provider preferences, stickiness, plugins. */
export function textRouting(body: {
  model?: string;
  models?: string[];
  provider?: ProviderPreferences;
  prompt_cache_key?: string | null;
  session_id?: string | null;
  plugins?: string[];
}): Pick<TextSubmit, 'model' | 'models' | 'provider' | 'stickiness' | 'plugins'> {
  return { model: body.model, models: body.models, provider: body.provider, stickiness: body.prompt_cache_key ?? body.session_id ?? undefined, plugins: body.plugins };
}

export interface TextSubmitted {
  submission: Submission;
  route: PlannedRoute;
  request: Omit<TextRequest, 'model'>;
  warnings: string[];
}

/** What the text routes (chat completions, responses) are given: the guard, the clock and the text service. */
export interface TextRouteDeps {
  guard: RequestHandler[];
  clock: () => Date;
  text: TextService;
}

export interface TextDeps {
  db: Db;
  planner: RoutePlanner;
  gateway: GenerationGateway;
  syncWaitMs: number;
}

/**
 * Text generations up to the queue: route, bound the cost, reserve (shrinking max_output_tokens to what the
 * balance allows), record, enqueue (decisions.md sections 4-6).
 */
export class TextService {
  constructor(private readonly d: TextDeps) {}

  async submit(s: TextSubmit): Promise<TextSubmitted> {
    const spec = this.d.planner.spec(s);
    // An inline reasoning_effort is the body's `reasoning.effort`: mapped alike, and requested alike (routing drops or,
    // with require_parameters, excludes endpoints without reasoning).
    const request = spec.reasoningEffort ? { ...s.request, reasoning: withReasoningEffort(s.request.reasoning, spec.reasoningEffort) } : { ...s.request };
    const route = await this.d.planner.plan({
      principal: s.principal,
      model: s.model,
      models: s.models,
      spec,
      provider: s.provider,
      requestedParameters: spec.reasoningEffort ? requestedParameters(request) : s.requestedParameters,
      modelType: 'chat',
      requireCapabilities: s.requireCapabilities,
      stickiness: s.stickiness,
      serviceTier: request.serviceTier,
    });
    // A limit above what the model can produce is refused (not silently lowered): the catalog's maxOutputTokens of
    // the most generous candidate endpoint, or the ceiling for an endpoint that does not say.
    const modelLimit = Math.max(...route.endpoints.map((e) => e.maxOutputTokens ?? OUTPUT_TOKENS_CEILING));
    if (request.maxOutputTokens !== undefined && request.maxOutputTokens > modelLimit) {
      const field = s.outputLimitField ?? 'max_output_tokens';
      throw AppError.validation(
        [{ path: `/${field}`, message: `must be <= ${modelLimit} (the model's output limit)` }],
        `${field} ${request.maxOutputTokens} is above the output limit of ${route.primary.id}: at most ${modelLimit}`,
      );
    }
    const warnings = [...(s.warnings ?? []), ...route.plan.warnings];

    const inputTokens = estimateInputTokens(request);
    const requested = request.maxOutputTokens ?? Number.MAX_SAFE_INTEGER;
    // At the price of the tier asked for, where an endpoint sells it (a priority call is bounded at the priority price).
    const priced = route.endpoints.map((e) => ({ ...e, price: tierPrice(e, request.serviceTier) }));
    // The bound and the least that still runs, over every endpoint (a fallback may land on the dearest): every input
    // token uncached, and every output token the endpoint allows (or MIN_OUTPUT_TOKENS of them) used.
    let bound = ZERO;
    let minimum = ZERO;
    for (const e of priced) {
      const output = Math.min(requested, e.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS);
      bound = Decimal.max(bound, tokenCost(e.price, { inputTokens, outputTokens: output }));
      minimum = Decimal.max(minimum, tokenCost(e.price, { inputTokens, outputTokens: Math.min(MIN_OUTPUT_TOKENS, output) }));
    }

    const submission = await this.d.gateway.order<TextJobData>({
      queue: QUEUES.text,
      id: s.id ?? newId('gen'),
      caller: { principal: s.principal, traceId: s.traceId, traceparent: s.traceparent, idempotency: s.idempotency, batchId: s.batchId, wholeBound: s.wholeBound },
      requestType: 'chat',
      apiType: s.apiType,
      mode: s.mode,
      primary: route.primary,
      request: typeof s.record === 'function' ? s.record(route) : s.record,
      candidates: route.candidates,
      dropped: route.plan.dropped,
      warnings,
      previousResponseId: s.previousResponseId,
      bound,
      minimum,
      job: (granted) => {
        if (granted.lessThan(bound)) {
          const fits = outputTokensFor(granted, priced, inputTokens);
          request.maxOutputTokens = Math.max(1, Math.min(fits, requested, DEFAULT_MAX_OUTPUT_TOKENS));
          warnings.push(`max_output_tokens was lowered to ${request.maxOutputTokens} to fit the available balance`);
        }
        return { stickyKey: route.stickyKey, apiType: s.apiType, mode: s.mode, request, plugins: s.plugins?.length ? s.plugins : undefined, ...(s.store === false && { store: false as const }) };
      },
      forget: s.store === false,
      // Plugins run around the provider call, which a provider's batch API makes without us.
      ...(s.plugins?.length && { upstreamBatch: false as const }),
    });
    return { submission, route, request, warnings };
  }

  /**
   * The reply of a synchronous text generation (408 past SYNC_WAIT_MS: text-replies.ts awaitText). A reply lost in a
   * Redis reconnect is read back from the record, unless `reread` is false (a `store: false` record keeps no text:
   * then a lost reply is a 408 rather than an empty answer).
   */
  reply(sub: Submission, opts: { reread?: boolean } = {}): Promise<TextDonePayload> {
    return awaitText(this.d.gateway, sub, this.d.syncWaitMs, opts.reread === false ? async () => null : () => this.completed(sub.id));
  }

  /**
   * Relays a streamed text generation as Server-Sent Events, event by event, as the worker publishes them (nothing is
   * buffered). A client that leaves stops the job and its upstream call: after content reached it, the generation
   * is billed for what was produced; before, it is cancelled uncharged (decisions.md section 4). Every stream ends with
   * a final event: one whose ending cannot be learned (PostgreSQL or Redis away) ends with `failed`, and the error is
   * rethrown for the log.
   */
  async stream(res: Response, sub: Submission, head: string[], h: StreamHandlers): Promise<void> {
    const { gateway, syncWaitMs: waitMs } = this.d;
    const gone = openEventStream(res, { head: head.join(''), onGone: () => sub.mailbox?.close() });
    let produced = false;
    let lastSeq = 0;
    // The stream's final event, written with the reply's end once the loop ends (every way out of it but the client
    // leaving sets it): one write.
    let last: string[] | undefined;
    const write = (chunks: string[]) => {
      if (!gone() && chunks.length) res.write(chunks.join(''));
    };
    // Out now: node:http corks a chunk until the next tick, and the work queued before then (sending the drawn record's
    // commit) held the stream's first byte about 1 ms at concurrency 1 (bench/rounds/29).
    if (res.socket?.writableCorked) res.socket.uncork();
    try {
      while (!gone()) {
        const m = await sub.mailbox!.next(waitMs);
        if (gone()) break;
        if (m && m.seq <= lastSeq && produced && (m.type === 'started' || m.type === 'delta')) {
          // The numbering started over: the job is being re-run (its worker died) and would send the text again from
          // the start. What the client already has cannot be taken back, so the stream ends here, uncharged (its re-run
          // found no checkpoint of it to keep: docs/billing-failures.md).
          await gateway.cancel(sub.id, sub.queue);
          last = h.failed({ code: 'SERVICE_UNAVAILABLE', message: 'The worker running this stream stopped: repeat the request' });
          break;
        }
        // A final message numbered anew is the ending another run made (it kept the stream's checkpoint): relayed
        // below.
        if (m && m.type !== 'recheck') lastSeq = m.seq;
        if (!m) {
          const final = await outwaited(gateway, sub, { goesOn: sub.keyed === true, produced, onDelta: (ev) => write(h.delta(ev)) });
          if (final === 'running') {
            // With an Idempotency-Key the generation goes on, and a repeat replays it once it has finished.
            last = h.failed({ code: 'REQUEST_TIMEOUT', message: `Timed out waiting for the model: generation ${sub.id} keeps running; repeat with the same Idempotency-Key to replay it once finished`, metadata: { reason: 'upstream_timeout', generation_id: sub.id } });
          } else if (final?.type === 'done') last = h.done(final.payload as TextDonePayload);
          else if (final?.type === 'failed') last = h.failed(final.error, final.payload as TextDonePayload | undefined);
          else if (final?.type === 'cancelled') last = h.failed(CANCELLED, final.payload as TextDonePayload | undefined);
          else last = h.failed({ code: 'REQUEST_TIMEOUT', message: 'Timed out waiting for the model', metadata: { reason: 'upstream_timeout' } });
          break;
        }
        if (m.type === 'started') h.started?.(m.model);
        else if (m.type === 'delta') {
          produced = true;
          write(h.delta(m.event));
        }
        else if (m.type === 'done') {
          // A repeat of a finished stream (same Idempotency-Key): its stored result, as the deltas it was made of.
          if (sub.replayed && !produced) write(replayEvents((m.payload as TextDonePayload).result).flatMap((ev) => h.delta(ev)));
          last = h.done(m.payload as TextDonePayload);
          break;
        } else if (m.type === 'failed') {
          last = h.failed(m.error, m.payload as TextDonePayload | undefined);
          break;
        } else if (m.type === 'cancelled') {
          last = h.failed(CANCELLED, m.payload as TextDonePayload | undefined);
          break;
        }
      }
    } catch (err) {
      last ??= h.failed(toAppError(err).toStored());
      throw err;
    } finally {
      sub.detach();
      if (!gone()) res.end(last?.join(''));
    }
    if (gone() && !sub.keyed) {
      // The client left before the end: stop the provider (with an Idempotency-Key it goes on, for a repeat to replay).
      // With content sent, the worker charges what was produced.
      if (produced) await gateway.stop(sub.id, 'client_gone');
      else await gateway.cancel(sub.id, sub.queue);
    }
  }

  /** The stored answer of a completed text generation, for a waiter that missed the worker's message. */
  private async completed(id: string): Promise<TextDonePayload | null> {
    const g = await generationById(this.d.db, id, (where) => this.d.db.generation.findFirst({ where }));
    // The cost shown is the amount charged (the record's client cost), as in the worker's own message.
    return g?.status === 'completed' ? { ...(g.result as unknown as TextDonePayload), cost: g.clientCost.toFixed(10) } : null;
  }
}
