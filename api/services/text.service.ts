import { AppError } from '../../shared/errors/app-error';
import { OUTPUT_TOKENS_CEILING } from '../../shared/schemas/responses.schema';
import type { TextRequest } from '../../shared/providers/provider.types';
import type { ProviderPreferences } from '../../shared/routing';
import { newId } from '../../shared/auth/api-keys';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../../shared/providers/provider.types';
import { estimateInputTokens, maxBound, outputTokensFor, textBound } from '../../shared/billing/pricing';
import { QUEUES } from '../../shared/queue/queue-names';
import type { TextJobData } from '../../shared/queue/job-catalog';
import type { ApiType, IdempotencyClaim, ResponseMode } from '../../shared/services/generation.service';
import { type Principal, ownerOf } from '../middleware/auth';
import type { GenerationGateway, Submission } from './generation-gateway';
import type { PlannedRoute, RoutePlanner } from './route-planner';

/** The least output a text request may be shrunk to when the balance does not cover its full bound. */
const MIN_OUTPUT_TOKENS = 16;

export interface TextSubmit {
  principal: Principal;
  traceId: string;
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
  /** What the caller sent, kept on the generation (echo fields, conversations, history). */
  record: unknown;
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
  idempotency?: IdempotencyClaim;
}

export interface TextSubmitted {
  submission: Submission;
  route: PlannedRoute;
  request: Omit<TextRequest, 'model'>;
  warnings: string[];
}

/**
 * Text generations up to the queue: route, bound the cost, reserve (shrinking max_output_tokens to what the
 * balance allows), record, enqueue (decisions.md sections 4-6).
 */
export class TextService {
  constructor(
    private readonly planner: RoutePlanner,
    private readonly gateway: GenerationGateway,
  ) {}

  async submit(s: TextSubmit): Promise<TextSubmitted> {
    const route = await this.planner.plan({
      principal: s.principal,
      model: s.model,
      models: s.models,
      provider: s.provider,
      requestedParameters: s.requestedParameters,
      modelType: 'chat',
      requireCapabilities: s.requireCapabilities,
      stickiness: s.stickiness,
    });
    const request = { ...s.request };
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
    if (route.spec.reasoningEffort) request.reasoning = { ...request.reasoning, effort: route.spec.reasoningEffort as NonNullable<TextRequest['reasoning']>['effort'] };
    const warnings = [...(s.warnings ?? []), ...route.plan.warnings];

    const inputTokens = estimateInputTokens(request);
    const outputFor = (max?: number) => Math.min(request.maxOutputTokens ?? Number.MAX_SAFE_INTEGER, max ?? DEFAULT_MAX_OUTPUT_TOKENS);
    const bound = maxBound(route.endpoints, (e) => textBound(e.price, inputTokens, outputFor(e.maxOutputTokens)));
    const minimum = maxBound(route.endpoints, (e) => textBound(e.price, inputTokens, Math.min(MIN_OUTPUT_TOKENS, outputFor(e.maxOutputTokens))));

    const id = s.id ?? newId('gen');
    const primary = route.primary;
    const submission = await this.gateway.submit<TextJobData>(
      QUEUES.text,
      {
        id,
        ...ownerOf(s.principal),
        model: primary.id,
        unifiedModelId: primary.id,
        modelDisplayName: primary.displayName,
        requestType: 'chat',
        apiType: s.apiType,
        responseMode: s.mode,
        request: s.record,
        routing: { candidates: route.candidates.map((c) => c.slug), dropped: route.plan.dropped },
        previousResponseId: s.previousResponseId ?? null,
        traceId: s.traceId,
        bound,
        minimum,
        idempotency: s.idempotency,
      },
      (granted) => {
        if (granted.lessThan(bound)) {
          const fits = outputTokensFor(granted, route.endpoints, inputTokens);
          request.maxOutputTokens = Math.max(1, Math.min(fits, outputFor()));
          warnings.push(`max_output_tokens was lowered to ${request.maxOutputTokens} to fit the available balance`);
        }
        return {
          generationId: id,
          ...ownerOf(s.principal),
          candidates: route.candidates,
          warnings,
          replyTo: s.mode === 'async' ? null : this.gateway.replyChannel,
          stickyKey: route.stickyKey,
          traceId: s.traceId,
          apiType: s.apiType,
          mode: s.mode,
          request,
          plugins: s.plugins?.length ? s.plugins : undefined,
          ...(s.store === false && { store: false as const }),
        };
      },
      { listen: s.mode !== 'async', forget: s.store === false },
    );
    return { submission, route, request, warnings };
  }
}

