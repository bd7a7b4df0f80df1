"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.tokenCost = tokenCost;
exports.textBound = textBound;
exports.maxBound = maxBound;
exports.outputTokensFor = outputTokensFor;
exports.estimateTokens = estimateTokens;
exports.estimateInputTokens = estimateInputTokens;
const money_1 = require("./money");
const MILLION = new money_1.Decimal(1_000_000);
/** Each catalog price's rates, parsed once: every request prices its endpoints two or three times. */
const RATES = new WeakMap();
function rate(price, field) {
    let rates = RATES.get(price);
    if (!rates)
        RATES.set(price, (rates = {}));
    return (rates[field] ??= (0, money_1.money)(price[field] ?? 0));
}
/** The real cost of a text or embeddings answer: tokens at the endpoint's prices (RUB per million) plus the request fee. */
function tokenCost(price, usage) {
    const cached = Math.min(usage.cachedTokens ?? 0, usage.inputTokens);
    const cachedRate = price.cached_prompt !== undefined ? rate(price, 'cached_prompt') : rate(price, 'prompt');
    return rate(price, 'prompt')
        .times(usage.inputTokens - cached)
        .plus(cachedRate.times(cached))
        .plus(rate(price, 'completion').times(usage.outputTokens))
        .dividedBy(MILLION)
        .plus(rate(price, 'request'));
}
/** Upper bound of a text request on one endpoint: every input token uncached, every allowed output token used. */
function textBound(price, inputTokens, maxOutputTokens) {
    return tokenCost(price, { inputTokens, outputTokens: maxOutputTokens });
}
/** The bound over several endpoints (a fallback may land on the dearest). */
function maxBound(endpoints, bound) {
    return endpoints.reduce((m, e) => money_1.Decimal.max(m, bound(e)), money_1.ZERO);
}
/** How many output tokens a budget buys after the input, on the dearest endpoint; 0 when not even the input fits. */
function outputTokensFor(budget, endpoints, inputTokens) {
    let best = Number.MAX_SAFE_INTEGER;
    for (const e of endpoints) {
        const fixed = tokenCost(e.price, { inputTokens, outputTokens: 0 });
        const perToken = rate(e.price, 'completion').dividedBy(MILLION);
        if (budget.lessThan(fixed))
            return 0;
        if (perToken.isZero())
            continue;
        best = Math.min(best, budget.minus(fixed).dividedBy(perToken).floor().toNumber());
    }
    return best;
}
/**
 * A cheap, deliberately generous token estimate for reservations (no tokenizer on the hot path):
 * about 3 characters a token, plus a little per message. The real charge uses the provider's usage.
 */
function estimateTokens(text) {
    return Math.ceil(text.length / 3) + 4;
}
/**
 * The one estimate of a text request's input tokens: what the reservation is sized for, and what a stream that
 * ended without the provider's usage is billed for.
 */
function estimateInputTokens(req) {
    return estimateTokens(JSON.stringify(req.input) + (req.instructions ?? '') + JSON.stringify(req.tools ?? ''));
}
