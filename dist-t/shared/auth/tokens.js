"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.signToken = signToken;
exports.verifyToken = verifyToken;
exports.looksLikeJwt = looksLikeJwt;
const node_crypto_1 = require("node:crypto");
const b64url = (buf) => Buffer.from(buf).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
function signToken(claims, secret, now = Date.now()) {
    const payload = b64url(JSON.stringify({ ...claims, iat: Math.floor(now / 1000) }));
    const sig = (0, node_crypto_1.createHmac)('sha256', secret).update(`${HEADER}.${payload}`).digest('base64url');
    return `${HEADER}.${payload}.${sig}`;
}
/** The claims of a valid, unexpired token, or null. Only HS256 is accepted (no `alg: none` tricks). */
function verifyToken(token, secret, now = Date.now()) {
    const parts = token.split('.');
    if (parts.length !== 3)
        return null;
    const [header, payload, sig] = parts;
    try {
        const h = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
        if (h.alg !== 'HS256')
            return null;
        const expected = (0, node_crypto_1.createHmac)('sha256', secret).update(`${header}.${payload}`).digest();
        const given = Buffer.from(sig, 'base64url');
        if (given.length !== expected.length || !(0, node_crypto_1.timingSafeEqual)(given, expected))
            return null;
        const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
        if (typeof claims.sub !== 'string' || typeof claims.org !== 'string')
            return null;
        if (!['owner', 'admin', 'member'].includes(claims.role))
            return null;
        if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now)
            return null;
        return claims;
    }
    catch {
        return null;
    }
}
function looksLikeJwt(token) {
    return token.startsWith('eyJ') && token.split('.').length === 3;
}
