"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ASPECT_RATIO_BY_SIZE = exports.DEFAULT_VIDEO_SECONDS = void 0;
exports.mediaData = mediaData;
exports.mediaRecord = mediaRecord;
exports.pendingImageBody = pendingImageBody;
exports.imageResult = imageResult;
exports.retryAfterSeconds = retryAfterSeconds;
exports.mediaCost = mediaCost;
exports.boundSeconds = boundSeconds;
exports.boundUnits = boundUnits;
exports.producedUnits = producedUnits;
exports.imageRequestToMediaInput = imageRequestToMediaInput;
exports.outputMimeType = outputMimeType;
exports.imageMimeType = imageMimeType;
const money_1 = require("../billing/money");
const format_utils_1 = require("./format-utils");
const unix = (d) => Math.floor(d.getTime() / 1000);
const isRecord = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
/** `data` of a result: the first file's fields, and `items` with every file when there are several. */
function mediaData(outputs) {
    const items = outputs.map((o) => ({
        url: o.url,
        mime_type: o.mimeType,
        file_id: o.fileId,
        ...(o.durationSeconds !== undefined && { duration_seconds: o.durationSeconds }),
    }));
    return items.length > 1 ? { ...items[0], items } : { ...items[0] };
}
/** Stored JSON comes back with its keys reordered (jsonb): replies list them in the documented order. */
function orderedItem(i) {
    return { url: i.url, mime_type: i.mime_type, file_id: i.file_id, ...(i.duration_seconds !== undefined && { duration_seconds: i.duration_seconds }) };
}
function orderedData(d) {
    return { ...orderedItem(d), ...(d.items && { items: d.items.map(orderedItem) }) };
}
const USAGE_FIELDS = ['input_units', 'output_units', 'duration_seconds', 'input_tokens', 'output_tokens', 'total_tokens'];
/** Stored usage plus the settled cost (`cost_rub` and `cost`, RUB, 6 places). */
function publicUsage(stored, clientCost) {
    const u = isRecord(stored) ? stored : {};
    const out = { input_units: 0, output_units: 0 };
    for (const f of USAGE_FIELDS)
        if (typeof u[f] === 'number')
            out[f] = u[f];
    const cost = (0, format_utils_1.moneyJson)(clientCost.toString());
    return { ...out, cost_rub: cost, cost };
}
/** Public error of a failed generation: `code`, `message`, `metadata.raw`/`provider_name`/`reason`; never a trace id. */
function publicError(error) {
    const e = isRecord(error) ? error : {};
    const meta = isRecord(e.metadata) ? e.metadata : {};
    const metadata = {};
    if (typeof meta.reason === 'string')
        metadata.reason = meta.reason;
    if (typeof meta.raw === 'string')
        metadata.raw = meta.raw;
    if (typeof meta.provider_name === 'string')
        metadata.provider_name = meta.provider_name;
    return {
        code: typeof e.code === 'string' ? e.code : 'BAD_GATEWAY',
        message: typeof e.message === 'string' ? e.message : 'The generation failed',
        ...(Object.keys(metadata).length > 0 && { metadata }),
    };
}
/**
 * The media generation record. `status` may be overridden: an operation on a source that is still being
 * prepared answers the source record as `processing` (interface.md rule 4).
 */
function mediaRecord(g, opts = {}) {
    const status = opts.status ?? g.status;
    const record = { id: g.id, object: 'media.generation', status, created: unix(g.createdAt), model: g.model };
    const finished = status === 'completed' || status === 'failed' || status === 'cancelled';
    if (finished && g.completedAt)
        record.completed_at = unix(g.completedAt);
    const result = isRecord(g.result) ? g.result : undefined;
    if (status === 'completed') {
        if (result?.data)
            record.data = orderedData(result.data);
        if (typeof result?.content === 'string')
            record.content = result.content;
        record.usage = publicUsage(g.usage, g.clientCost);
    }
    if (status === 'failed')
        record.error = publicError(g.error);
    if (Array.isArray(g.warnings) && g.warnings.length > 0)
        record.warnings = g.warnings.filter((w) => typeof w === 'string');
    if (!finished)
        record.taskId = g.id;
    return record;
}
/** The body of an image request that did not finish in time (interface.md; decisions.md section 5). */
function pendingImageBody(g) {
    return { id: g.id, status: 'pending', model: g.model, created: unix(g.createdAt), taskId: g.id };
}
/**
 * The image generation result of a completed generation. Which of `url` / `b64_json` is filled follows
 * `response_format` (interface.md): `url` (our stored file) by default; with `b64_json` the bytes as base64
 * (`base64`, one per image) and no `url`, as OpenAI answers.
 */
function imageResult(g, base64) {
    const record = mediaRecord(g);
    const result = isRecord(g.result) ? g.result : {};
    const outputs = result.outputs ?? [];
    return {
        created: unix(g.createdAt),
        data: outputs.map((o, i) => ({
            ...(base64 ? { b64_json: base64[i] ?? '' } : { url: o.url }),
            ...(o.revisedPrompt !== undefined && { revised_prompt: o.revisedPrompt }),
        })),
        usage: record.usage ?? { input_units: 0, output_units: 0, cost_rub: 0, cost: 0 },
    };
}
/** Polling hint of a generation still running (interface.md: 3 to 5 s images, 5 to 10 s video). */
function retryAfterSeconds(requestType) {
    return requestType === 'image' ? 3 : 5;
}
/** `request` + `image` × images + `video_per_second` × seconds + `tts_per_million_characters` × characters / 10⁶. */
function mediaCost(price, units) {
    return (0, money_1.money)(price.request ?? 0)
        .plus((0, money_1.money)(price.image ?? 0).times(units.images ?? 0))
        .plus((0, money_1.money)(price.video_per_second ?? 0).times(new money_1.Decimal(units.videoSeconds ?? 0)))
        .plus((0, money_1.money)(price.tts_per_million_characters ?? 0).times(units.characters ?? 0).dividedBy(1_000_000));
}
/** Seconds reserved for a video whose length is not asked for (the longest `extend` duration). */
exports.DEFAULT_VIDEO_SECONDS = 10;
/**
 * Seconds to reserve for a video on one endpoint: its longest output (catalog `maxDurationSeconds`) when it
 * has one, since a provider may run longer than asked, else the requested duration (undefined: not asked).
 */
function boundSeconds(endpoint, requested) {
    if (endpoint.maxDurationSeconds === undefined)
        return requested;
    return Math.max(endpoint.maxDurationSeconds, requested ?? 0);
}
/** The units a generation of this kind will be billed by at most, from its request. */
function boundUnits(kind, a) {
    if (kind === 'image')
        return { images: a.images ?? 1 };
    if (kind === 'video')
        return { videoSeconds: a.seconds ?? exports.DEFAULT_VIDEO_SECONDS };
    // An upscale turns out a video or an image, whichever its source is: bound both.
    if (kind === 'upscale')
        return { videoSeconds: a.seconds ?? exports.DEFAULT_VIDEO_SECONDS, images: 1 };
    return { characters: a.prompt?.length ?? 0 };
}
/** The units actually produced. */
function producedUnits(kind, outputs, a) {
    if (kind === 'image' || (kind === 'upscale' && a.sourceIsImage))
        return { images: outputs.length };
    if (kind === 'video' || kind === 'upscale')
        return { videoSeconds: a.seconds ?? 0 };
    return { characters: a.prompt?.length ?? 0 };
}
// ---------- image requests as media-task input ----------
/** OpenAI image sizes → the aspect ratios hosted image models take. */
exports.ASPECT_RATIO_BY_SIZE = new Map([
    ['256x256', '1:1'],
    ['512x512', '1:1'],
    ['1024x1024', '1:1'],
    ['1536x1024', '3:2'],
    ['1024x1536', '2:3'],
    ['1792x1024', '16:9'],
    ['1024x1792', '9:16'],
]);
/** An image request for a model hosted behind a media-task API (Replicate). */
function imageRequestToMediaInput(req) {
    const input = { prompt: req.prompt };
    if (req.n !== undefined)
        input.max_images = req.n;
    const ratio = req.size ? exports.ASPECT_RATIO_BY_SIZE.get(req.size) : undefined;
    if (ratio)
        input.aspect_ratio = ratio;
    if (req.outputFormat)
        input.output_format = req.outputFormat;
    if (req.outputCompression !== undefined)
        input.output_compression = req.outputCompression;
    return input;
}
const MIME_BY_EXTENSION = new Map([
    ['png', 'image/png'],
    ['jpg', 'image/jpeg'],
    ['jpeg', 'image/jpeg'],
    ['webp', 'image/webp'],
    ['gif', 'image/gif'],
    ['mp4', 'video/mp4'],
    ['webm', 'video/webm'],
    ['mov', 'video/quicktime'],
    ['mp3', 'audio/mpeg'],
    ['wav', 'audio/wav'],
    ['flac', 'audio/flac'],
    ['ogg', 'audio/ogg'],
    ['m4a', 'audio/mp4'],
    ['aac', 'audio/aac'],
]);
const DEFAULT_MIME = { image: 'image/png', video: 'video/mp4', audio: 'audio/mpeg', upscale: 'video/mp4' };
/** The type of a downloaded result: the reply's media Content-Type, else the URL's extension, else the kind's default. */
function outputMimeType(kind, url, contentType) {
    const declared = (contentType ?? '').split(';')[0].trim().toLowerCase();
    if (/^(image|video|audio)\//.test(declared))
        return declared;
    let path = url;
    try {
        path = new URL(url).pathname;
    }
    catch {
        // not absolute: use as is
    }
    const ext = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase();
    return (ext && MIME_BY_EXTENSION.get(ext)) || DEFAULT_MIME[kind];
}
/** MIME type of an image format name (`png`, `jpeg`, `webp`). */
function imageMimeType(format) {
    return MIME_BY_EXTENSION.get((format ?? 'png').toLowerCase()) ?? 'image/png';
}
