import type { DroppedCandidate } from './routing.types';

export const ROUTING_ERROR_REASONS = [
  'model_not_found',
  'no_eligible_provider',
  'price_above_max',
  'parameters_unsupported',
] as const;
export type RoutingErrorReason = (typeof ROUTING_ERROR_REASONS)[number];

/** decisions.md section 3: reason -> HTTP status and error code. */
export const ROUTING_ERROR_STATUS: Record<RoutingErrorReason, { status: number; code: 'NOT_FOUND' | 'BAD_REQUEST' }> = {
  model_not_found: { status: 404, code: 'NOT_FOUND' },
  no_eligible_provider: { status: 400, code: 'BAD_REQUEST' },
  price_above_max: { status: 400, code: 'BAD_REQUEST' },
  parameters_unsupported: { status: 400, code: 'BAD_REQUEST' },
};

/** Routing left nothing to call (or the model is unknown). `candidates` goes into `error.metadata.candidates`. */
export class RoutingError extends Error {
  readonly reason: RoutingErrorReason;
  readonly candidates: DroppedCandidate[];
  /** The model concerned, when there is one. */
  readonly model?: string;

  constructor(reason: RoutingErrorReason, message: string, candidates: DroppedCandidate[] = [], model?: string) {
    super(message);
    this.name = 'RoutingError';
    this.reason = reason;
    this.candidates = candidates;
    this.model = model;
  }
}

/** Malformed routing input (inline model options, routing object values): 400 `validation_failed`. */
export class RoutingInputError extends Error {
  /** Request field concerned, e.g. `model` or `provider.sort`. */
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.name = 'RoutingInputError';
    this.field = field;
  }
}
