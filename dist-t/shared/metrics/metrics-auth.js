"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.bearerMatches = bearerMatches;
const node_crypto_1 = require("node:crypto");
/** `Authorization: Bearer <token>` equals `token`, compared in constant time (hashes have equal length). */
function bearerMatches(header, token) {
    const m = /^Bearer (\S+)$/.exec(header ?? '');
    if (!m)
        return false;
    const digest = (s) => (0, node_crypto_1.createHash)('sha256').update(s).digest();
    return (0, node_crypto_1.timingSafeEqual)(digest(m[1]), digest(token));
}
