"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.REASONING_EFFORTS = exports.INLINE_MODEL_OPTIONS = void 0;
exports.parseModelSpec = parseModelSpec;
exports.applyModelSpec = applyModelSpec;
const routing_errors_1 = require("./routing-errors");
/** Inline options: `<model>@provider=<name>&reasoning_effort=<level>&allow_fallbacks=<bool>`. */
exports.INLINE_MODEL_OPTIONS = ['provider', 'reasoning_effort', 'allow_fallbacks'];
/** Accepted `reasoning_effort` values (OpenAI's levels plus `max`). */
exports.REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];
/**
 * Split a `model` field into the model id and its inline routing options.
 * Throws `RoutingInputError` on an empty model, an unknown or repeated option, an empty value,
 * a bad boolean or an unknown reasoning effort.
 */
function parseModelSpec(model, options = {}) {
    const field = options.field ?? 'model';
    if (typeof model !== 'string' || model.length === 0) {
        throw new routing_errors_1.RoutingInputError(field, 'Model must be a non-empty string');
    }
    if (options.isKnownModel?.(model))
        return { model };
    // Option values never contain '@', so the last '@' separates the options from an id that may hold one.
    const at = model.lastIndexOf('@');
    if (at < 0)
        return { model };
    const id = model.slice(0, at);
    const query = model.slice(at + 1);
    if (id.length === 0)
        throw new routing_errors_1.RoutingInputError(field, `Model is missing before '@' in '${model}'`);
    if (query.length === 0)
        throw new routing_errors_1.RoutingInputError(field, `No routing options after '@' in '${model}'`);
    const spec = { model: id };
    const seen = new Set();
    for (const pair of query.split('&')) {
        if (pair.length === 0)
            throw new routing_errors_1.RoutingInputError(field, `Empty routing option in '${model}'`);
        const eq = pair.indexOf('=');
        const key = eq < 0 ? pair : pair.slice(0, eq);
        const raw = eq < 0 ? '' : pair.slice(eq + 1);
        if (!exports.INLINE_MODEL_OPTIONS.includes(key)) {
            throw new routing_errors_1.RoutingInputError(field, `Unknown routing option '${key}' in model '${model}'; allowed: ${exports.INLINE_MODEL_OPTIONS.join(', ')}`);
        }
        if (seen.has(key))
            throw new routing_errors_1.RoutingInputError(field, `Routing option '${key}' is given twice in '${model}'`);
        seen.add(key);
        const value = decode(raw, key, field);
        if (value.trim().length === 0)
            throw new routing_errors_1.RoutingInputError(field, `Routing option '${key}' has no value`);
        switch (key) {
            case 'provider':
                spec.provider = { order: [value] };
                break;
            case 'reasoning_effort': {
                const effort = value.toLowerCase();
                if (!exports.REASONING_EFFORTS.includes(effort)) {
                    throw new routing_errors_1.RoutingInputError(field, `Bad reasoning_effort '${value}'; allowed: ${exports.REASONING_EFFORTS.join(', ')}`);
                }
                spec.reasoningEffort = effort;
                break;
            }
            case 'allow_fallbacks': {
                const b = value.toLowerCase();
                if (b !== 'true' && b !== 'false') {
                    throw new routing_errors_1.RoutingInputError(field, `Bad allow_fallbacks '${value}'; expected true or false`);
                }
                spec.allowFallbacks = b === 'true';
                break;
            }
        }
    }
    return spec;
}
function decode(raw, key, field) {
    try {
        return decodeURIComponent(raw);
    }
    catch {
        throw new routing_errors_1.RoutingInputError(field, `Routing option '${key}' has a malformed value`);
    }
}
/**
 * The routing object with the inline options applied on top: inline `provider` replaces `order`,
 * inline `allow_fallbacks` replaces `allow_fallbacks`. Returns a new object.
 */
function applyModelSpec(preferences, spec) {
    const out = { ...(preferences ?? {}) };
    if (spec.provider)
        out.order = [...spec.provider.order];
    if (spec.allowFallbacks !== undefined)
        out.allow_fallbacks = spec.allowFallbacks;
    return out;
}
