"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_OPERATOR_TOKEN_TTL_SECONDS = void 0;
exports.signOperatorToken = signOperatorToken;
exports.verifyOperatorToken = verifyOperatorToken;
const node_crypto_1 = require("node:crypto");
exports.DEFAULT_OPERATOR_TOKEN_TTL_SECONDS = 12 * 3600;
const b64url = (buf) => Buffer.from(buf).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
function operatorKey(secret) {
    return (0, node_crypto_1.createHmac)('sha256', secret).update('switchyard operator token v1').digest();
}
function signOperatorToken(secret, ttlSeconds = exports.DEFAULT_OPERATOR_TOKEN_TTL_SECONDS, now = Date.now()) {
    const iat = Math.floor(now / 1000);
    const claims = { typ: 'operator', sub: 'operator', iat, exp: iat + ttlSeconds };
    const payload = b64url(JSON.stringify(claims));
    const sig = (0, node_crypto_1.createHmac)('sha256', operatorKey(secret)).update(`${HEADER}.${payload}`).digest('base64url');
    return `${HEADER}.${payload}.${sig}`;
}
/** The claims of a valid, unexpired operator token, or null. */
function verifyOperatorToken(token, secret, now = Date.now()) {
    const parts = token.split('.');
    if (parts.length !== 3)
        return null;
    const [header, payload, sig] = parts;
    try {
        if (JSON.parse(Buffer.from(header, 'base64url').toString('utf8')).alg !== 'HS256')
            return null;
        const expected = (0, node_crypto_1.createHmac)('sha256', operatorKey(secret)).update(`${header}.${payload}`).digest();
        const given = Buffer.from(sig, 'base64url');
        if (given.length !== expected.length || !(0, node_crypto_1.timingSafeEqual)(given, expected))
            return null;
        const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
        if (claims.typ !== 'operator' || typeof claims.exp !== 'number' || claims.exp * 1000 <= now)
            return null;
        return claims;
    }
    catch {
        return null;
    }
}
