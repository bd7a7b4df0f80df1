"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RoutingInputError = exports.RoutingError = exports.ROUTING_ERROR_STATUS = exports.ROUTING_ERROR_REASONS = void 0;
exports.ROUTING_ERROR_REASONS = [
    'model_not_found',
    'no_eligible_provider',
    'price_above_max',
    'parameters_unsupported',
];
/** decisions.md section 3: reason -> HTTP status and error code. */
exports.ROUTING_ERROR_STATUS = {
    model_not_found: { status: 404, code: 'NOT_FOUND' },
    no_eligible_provider: { status: 400, code: 'BAD_REQUEST' },
    price_above_max: { status: 400, code: 'BAD_REQUEST' },
    parameters_unsupported: { status: 400, code: 'BAD_REQUEST' },
};
/** Routing left nothing to call (or the model is unknown). `candidates` goes into `error.metadata.candidates`. */
class RoutingError extends Error {
    reason;
    candidates;
    /** The model concerned, when there is one. */
    model;
    constructor(reason, message, candidates = [], model) {
        super(message);
        this.name = 'RoutingError';
        this.reason = reason;
        this.candidates = candidates;
        this.model = model;
    }
}
exports.RoutingError = RoutingError;
/** Malformed routing input (inline model options, routing object values): 400 `validation_failed`. */
class RoutingInputError extends Error {
    /** Request field concerned, e.g. `model` or `provider.sort`. */
    field;
    constructor(field, message) {
        super(message);
        this.name = 'RoutingInputError';
        this.field = field;
    }
}
exports.RoutingInputError = RoutingInputError;
