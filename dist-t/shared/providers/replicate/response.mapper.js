"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.REPLICATE_STATUS = void 0;
exports.parsePrediction = parsePrediction;
exports.extractReplicateError = extractReplicateError;
const mapper_utils_1 = require("../mapper-utils");
/** https://replicate.com/docs/topics/predictions/lifecycle */
exports.REPLICATE_STATUS = new Map([
    ['starting', 'pending'],
    ['processing', 'processing'],
    ['succeeded', 'succeeded'],
    ['failed', 'failed'],
    ['canceled', 'cancelled'],
    ['aborted', 'cancelled'],
]);
const FILE_URL = /^(https?:|data:)/i;
/** `output` is a URL, an array of URLs, text chunks, or an object of those. */
function readOutput(output) {
    const values = Array.isArray(output) ? output : (0, mapper_utils_1.isRecord)(output) ? Object.values(output) : output == null ? [] : [output];
    const strings = values.filter((v) => typeof v === 'string');
    const urls = strings.filter((s) => FILE_URL.test(s));
    if (urls.length > 0 || strings.length === 0)
        return { urls };
    return { urls, text: strings.join('') };
}
function parsePrediction(json) {
    const body = (0, mapper_utils_1.rec)(json);
    const id = (0, mapper_utils_1.str)(body.id);
    const raw = (0, mapper_utils_1.str)(body.status);
    const status = raw === undefined ? undefined : exports.REPLICATE_STATUS.get(raw);
    if (!id || !status)
        return (0, mapper_utils_1.malformed)('Replicate prediction without id or known status', json);
    const metrics = (0, mapper_utils_1.rec)(body.metrics);
    const { urls, text } = status === 'succeeded' ? readOutput(body.output) : { urls: [], text: undefined };
    if (status === 'succeeded' && urls.length === 0 && text === undefined)
        return (0, mapper_utils_1.malformed)('Replicate prediction succeeded without output', json);
    const task = { id, status, outputs: urls, metrics: {} };
    if (text !== undefined)
        task.text = text;
    const error = body.error;
    if (error !== undefined && error !== null)
        task.error = typeof error === 'string' ? error : JSON.stringify(error);
    const duration = (0, mapper_utils_1.num)(metrics.video_output_duration_seconds) ?? (0, mapper_utils_1.num)(metrics.audio_output_duration_seconds);
    if (duration !== undefined)
        task.metrics.durationSeconds = duration;
    const images = (0, mapper_utils_1.num)(metrics.image_output_count);
    if (images !== undefined)
        task.metrics.imageCount = images;
    const predict = (0, mapper_utils_1.num)(metrics.predict_time);
    if (predict !== undefined)
        task.metrics.predictSeconds = predict;
    const inTok = (0, mapper_utils_1.num)(metrics.input_token_count);
    const outTok = (0, mapper_utils_1.num)(metrics.output_token_count);
    if (inTok !== undefined)
        task.metrics.inputTokens = inTok;
    if (outTok !== undefined)
        task.metrics.outputTokens = outTok;
    return task;
}
/** Replicate errors are RFC 7807 problem documents: `{title, detail, status}`. */
function extractReplicateError(body) {
    const b = (0, mapper_utils_1.rec)(body);
    const message = (0, mapper_utils_1.str)(b.detail) ?? (0, mapper_utils_1.str)(b.title) ?? (0, mapper_utils_1.str)(b.error);
    return message === undefined ? {} : { message };
}
