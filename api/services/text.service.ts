import { AppError } from '../../shared/errors/app-error';
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
import { awaitText, pumpStream, type StreamHandlers } from './text-replies';
import type { PlannedRoute, RoutePlanner } from './route-planner';
import { generationById } from '../../shared/db/generation-reads';

/** The least output a text request may be shrunk to when the balance does not cover its full bound. */
const MIN_OUTPUT_TOKENS = 16;

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

  /** Relays a streamed text generation as Server-Sent Events (text-replies.ts pumpStream). */
  stream(res: Response, sub: Submission, head: string[], h: StreamHandlers): Promise<void> {
    return pumpStream(res, this.d.gateway, sub, this.d.syncWaitMs, head, h);
  }

  /** The stored answer of a completed text generation, for a waiter that missed the worker's message. */
  private async completed(id: string): Promise<TextDonePayload | null> {
    const g = await generationById(this.d.db, id, (where) => this.d.db.generation.findFirst({ where }));
    // The cost shown is the amount charged (the record's client cost), as in the worker's own message.
    return g?.status === 'completed' ? { ...(g.result as unknown as TextDonePayload), cost: g.clientCost.toFixed(10) } : null;
  }
}
