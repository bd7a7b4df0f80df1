"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.BLOB_KEY_PATTERN = void 0;
exports.assertBlobKey = assertBlobKey;
exports.readAll = readAll;
/** Keys are generated ids: letters, digits, `_` and `-` only, so no key can climb out of its folder or bucket prefix. */
exports.BLOB_KEY_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;
function assertBlobKey(key) {
    if (!exports.BLOB_KEY_PATTERN.test(key))
        throw new Error(`Invalid blob key ${JSON.stringify(key)}`);
}
/** Reads a stream to one buffer (bounded by whoever produced it). */
async function readAll(body) {
    const chunks = [];
    for await (const chunk of body)
        chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    return Buffer.concat(chunks);
}
