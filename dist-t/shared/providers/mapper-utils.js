"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.isRecord = isRecord;
exports.str = str;
exports.num = num;
exports.arr = arr;
exports.rec = rec;
exports.malformed = malformed;
exports.unsupported = unsupported;
exports.parseDataUrl = parseDataUrl;
exports.mimeTypeFromUrl = mimeTypeFromUrl;
exports.parseJsonArguments = parseJsonArguments;
exports.parseStreamJson = parseStreamJson;
const upstream_error_1 = require("./upstream-error");
function isRecord(value) {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}
function str(value) {
    return typeof value === 'string' ? value : undefined;
}
function num(value) {
    return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
function arr(value) {
    return Array.isArray(value) ? value : [];
}
function rec(value) {
    return isRecord(value) ? value : {};
}
/** A 2xx body that is not the documented shape: `malformed_reply`, so the next endpoint may be tried. */
function malformed(message, body) {
    let raw;
    try {
        raw = JSON.stringify(body);
    }
    catch {
        raw = undefined;
    }
    throw (0, upstream_error_1.upstreamError)(raw === undefined ? { kind: 'malformed', message } : { kind: 'malformed', message, raw });
}
/** The request cannot be written in this provider's format; nothing was sent. */
function unsupported(message) {
    throw (0, upstream_error_1.upstreamError)({ kind: 'unsupported', message });
}
/** `data:image/png;base64,AAAA` → {mimeType, base64}; anything else → undefined. */
function parseDataUrl(url) {
    const match = /^data:([^,]*?),(.*)$/s.exec(url);
    if (!match)
        return undefined;
    const meta = match[1] ?? '';
    const payload = match[2] ?? '';
    const parts = meta.split(';');
    const mimeType = parts[0] || 'text/plain';
    const isBase64 = parts.slice(1).some((p) => p.toLowerCase() === 'base64');
    const base64 = isBase64 ? payload : Buffer.from(decodeURIComponent(payload), 'utf8').toString('base64');
    return { mimeType, base64 };
}
const IMAGE_MIME_BY_EXTENSION = new Map([
    ['png', 'image/png'],
    ['jpg', 'image/jpeg'],
    ['jpeg', 'image/jpeg'],
    ['webp', 'image/webp'],
    ['gif', 'image/gif'],
    ['heic', 'image/heic'],
    ['heif', 'image/heif'],
    ['pdf', 'application/pdf'],
]);
/** Best guess of a remote file's type from its URL path (providers that want a mime type for URLs). */
function mimeTypeFromUrl(url) {
    let path = url;
    try {
        path = new URL(url).pathname;
    }
    catch {
        // not absolute: use as is
    }
    const ext = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase();
    return ext ? IMAGE_MIME_BY_EXTENSION.get(ext) : undefined;
}
function parseJsonArguments(text, what) {
    if (text.trim() === '')
        return {};
    let value;
    try {
        value = JSON.parse(text);
    }
    catch {
        return unsupported(`${what}: arguments are not valid JSON`);
    }
    if (!isRecord(value))
        return unsupported(`${what}: arguments must be a JSON object`);
    return value;
}
/** A stream `data:` line that is not JSON. */
function parseStreamJson(data) {
    try {
        const value = JSON.parse(data);
        if (isRecord(value))
            return { ok: true, value };
    }
    catch {
        // fall through
    }
    return { ok: false, event: { type: 'error', message: 'malformed stream event: not a JSON object', raw: data.slice(0, 2000) } };
}
