"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.embeddingsToCanonical = embeddingsToCanonical;
exports.encodeEmbeddingBase64 = encodeEmbeddingBase64;
exports.decodeEmbeddingBase64 = decodeEmbeddingBase64;
exports.buildEmbeddingList = buildEmbeddingList;
exports.embeddingInputTokens = embeddingInputTokens;
function embeddingsToCanonical(body) {
    const input = body.input;
    // One array of token ids is one input; an array of token arrays is one input each.
    const raw = typeof input === 'string' ? [input] : input.length > 0 && typeof input[0] === 'number' ? [input] : input;
    let hasImages = false;
    let hasTokens = false;
    const inputs = raw.map((item) => {
        if (typeof item === 'string')
            return { type: 'text', text: item };
        if (Array.isArray(item)) {
            hasTokens = true;
            return { type: 'tokens', tokens: item };
        }
        return {
            type: 'multimodal',
            content: item.content.map((block) => {
                if (block.type === 'text')
                    return { type: 'text', text: block.text };
                hasImages = true;
                return { type: 'image_url', url: block.image_url.url };
            }),
        };
    });
    const out = { inputs, hasImages, hasTokens };
    if (body.dimensions !== undefined)
        out.dimensions = body.dimensions;
    if (body.user !== undefined)
        out.user = body.user;
    return out;
}
/** A vector as base64 of its little-endian float32 bytes. */
function encodeEmbeddingBase64(vector) {
    const bytes = new ArrayBuffer(vector.length * 4);
    const view = new DataView(bytes);
    vector.forEach((x, i) => view.setFloat32(i * 4, x, true));
    return Buffer.from(bytes).toString('base64');
}
/** The inverse of `encodeEmbeddingBase64`. */
function decodeEmbeddingBase64(base64) {
    const buf = Buffer.from(base64, 'base64');
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const out = new Float32Array(Math.floor(buf.byteLength / 4));
    for (let i = 0; i < out.length; i++)
        out[i] = view.getFloat32(i * 4, true);
    return out;
}
function buildEmbeddingList(a) {
    const list = {
        id: a.id,
        object: 'list',
        data: a.result.vectors.map((v, index) => ({
            object: 'embedding',
            embedding: a.encoding === 'base64' ? encodeEmbeddingBase64(v) : v,
            index,
        })),
        model: a.model,
        usage: a.usage,
    };
    if (a.switchyard)
        list.switchyard = a.switchyard;
    return list;
}
/** Tokens an input stands for, for the reservation bound: token arrays count exactly, text is estimated. */
function embeddingInputTokens(input, estimate) {
    return input.type === 'tokens' ? input.tokens.length : estimate(JSON.stringify(input));
}
