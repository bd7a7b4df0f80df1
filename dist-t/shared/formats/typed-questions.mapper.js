"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.NOUL_LABELS = exports.TOP_LOGPROBS = void 0;
exports.scoreToken = scoreToken;
exports.answerScheme = answerScheme;
exports.schemeOf = schemeOf;
exports.questionRequest = questionRequest;
exports.logSumExp = logSumExp;
exports.labelProbabilities = labelProbabilities;
exports.answerFromProbabilities = answerFromProbabilities;
exports.readAnswer = readAnswer;
/** Alternatives asked for at the answer position: the most every provider we speak to allows (OpenAI: 20). */
exports.TOP_LOGPROBS = 20;
/** Labels of a noul question: yes first (its probability is the answer). */
exports.NOUL_LABELS = ['yes', 'no'];
const letter = (i) => String.fromCharCode(65 + i);
/** The answer token of scale position `i` (0-based): `1`..`9`, then `A`, `B`, ... */
function scoreToken(i) {
    return i < 9 ? String(i + 1) : letter(i - 9);
}
function answerScheme(q) {
    if (q.type === 'noul')
        return schemeOf('noul', [...exports.NOUL_LABELS]);
    return schemeOf(q.type, Array.isArray(q.criteria) ? [...q.criteria] : Object.keys(q.criteria ?? {}));
}
/** The scheme of a question type with its labels (what a job carries). */
function schemeOf(type, labels) {
    if (type === 'noul')
        return { type, labels: [...exports.NOUL_LABELS], tokens: ['Y', 'N'] };
    return { type, labels, tokens: labels.map((_, i) => (type === 'choice' ? letter(i) : scoreToken(i))) };
}
/** Normalised spellings accepted for each label (lower case, trimmed). */
function spellings(scheme) {
    const out = new Map();
    scheme.tokens.forEach((t, i) => out.set(t.toLowerCase(), i));
    if (scheme.type === 'noul') {
        out.set('yes', 0);
        out.set('no', 1);
    }
    return out;
}
const list = (tokens) => (tokens.length <= 1 ? tokens.join('') : `${tokens.slice(0, -1).join(', ')} or ${tokens[tokens.length - 1]}`);
/**
 * The request of one question: system = the instructions, the allowed answers and the state as JSON; one
 * output token at temperature 0 with the top log-probabilities of that token.
 */
function questionRequest(state, q, scheme = answerScheme(q)) {
    const options = q.type === 'noul'
        ? ['Y: yes', 'N: no']
        : q.type === 'choice'
            ? scheme.labels.map((l, i) => `${scheme.tokens[i]}: ${l}${q.criteria[l] ? ` — ${q.criteria[l]}` : ''}`)
            : scheme.labels.map((l, i) => `${scheme.tokens[i]}: ${l}`);
    const kind = q.type === 'noul'
        ? 'Answer the question with yes (Y) or no (N).'
        : q.type === 'choice'
            ? 'Choose the one option that fits best.'
            : `Rate on the scale below, from the lowest (${scheme.tokens[0]}) to the highest (${scheme.tokens[scheme.tokens.length - 1]}).`;
    const instructions = [
        'You judge the state below and answer one question with exactly one token.',
        '',
        `Question: ${q.instructions}`,
        '',
        kind,
        ...options,
        '',
        'State (JSON):',
        JSON.stringify(state),
        '',
        `Reply with exactly one of ${list(scheme.tokens)} and nothing else: no words, no punctuation, no explanation.`,
    ].join('\n');
    const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: `Answer (${list(scheme.tokens)}):` }] }];
    return { instructions, input, maxOutputTokens: 1, temperature: 0, logprobs: true, topLogprobs: exports.TOP_LOGPROBS, stream: false };
}
/** log(Σ exp(x)), stable for large negative log-probabilities. */
function logSumExp(xs) {
    if (!xs.length)
        return -Infinity;
    const m = Math.max(...xs);
    if (m === -Infinity)
        return -Infinity;
    let s = 0;
    for (const x of xs)
        s += Math.exp(x - m);
    return m + Math.log(s);
}
/**
 * Probabilities of the labels (in `scheme.labels` order) from the first output position, or null when the
 * reply has no log-probabilities or none of the allowed tokens is among the alternatives.
 */
function labelProbabilities(scheme, logprobs) {
    const first = logprobs?.[0];
    if (!first)
        return null;
    // The chosen token normally heads `top`; it is added in case a provider leaves it out. Same token once.
    const alternatives = new Map();
    for (const a of [...first.top, { token: first.token, logprob: first.logprob }]) {
        if (!alternatives.has(a.token) && Number.isFinite(a.logprob))
            alternatives.set(a.token, a.logprob);
    }
    const bySpelling = spellings(scheme);
    const perLabel = scheme.labels.map(() => []);
    for (const [token, logprob] of alternatives) {
        const i = bySpelling.get(token.trim().toLowerCase());
        if (i !== undefined)
            perLabel[i].push(logprob);
    }
    const logs = perLabel.map(logSumExp);
    const total = logSumExp(logs.filter((l) => l > -Infinity));
    if (total === -Infinity)
        return null;
    return logs.map((l) => (l === -Infinity ? 0 : Math.exp(l - total)));
}
/** The index of the largest probability (the first on ties). */
function argmax(ps) {
    let best = 0;
    for (let i = 1; i < ps.length; i++)
        if (ps[i] > ps[best])
            best = i;
    return best;
}
/** The public answer from the label probabilities. */
function answerFromProbabilities(scheme, ps) {
    if (scheme.type === 'noul')
        return { type: 'noul', noul: ps[0] };
    const probabilities = Object.fromEntries(scheme.labels.map((l, i) => [l, ps[i]]));
    const best = argmax(ps);
    if (scheme.type === 'choice')
        return { type: 'choice', choice: scheme.labels[best], confidence: ps[best], probabilities };
    const n = scheme.labels.length;
    // Expected position mapped to 0..1: the first label is 0, the last 1.
    const score = ps.reduce((s, p, i) => s + (p * i) / (n - 1), 0);
    return { type: 'score', score, label: scheme.labels[best], probabilities };
}
/** The answer of a reply, or null when the reply carries no usable log-probabilities. */
function readAnswer(scheme, logprobs) {
    const ps = labelProbabilities(scheme, logprobs);
    return ps ? answerFromProbabilities(scheme, ps) : null;
}
