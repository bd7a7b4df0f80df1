"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.KEY_PATTERN = exports.KEY_PREFIX = void 0;
exports.randomBase62 = randomBase62;
exports.generateApiKey = generateApiKey;
exports.hashApiKey = hashApiKey;
exports.keyLabel = keyLabel;
exports.newId = newId;
exports.newSecret = newSecret;
const node_crypto_1 = require("node:crypto");
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
exports.KEY_PREFIX = 'sy_';
exports.KEY_PATTERN = /^sy_[A-Za-z0-9]{40}$/;
function randomBase62(length) {
    let out = '';
    for (let i = 0; i < length; i++)
        out += BASE62[(0, node_crypto_1.randomInt)(62)];
    return out;
}
/** A new API key: `sy_` + 40 random base62 characters (decisions.md section 2). */
function generateApiKey() {
    return exports.KEY_PREFIX + randomBase62(40);
}
/** Only this hash is stored. */
function hashApiKey(key) {
    return (0, node_crypto_1.createHash)('sha256').update(key).digest('hex');
}
/** `sy_...a1B2c3`: the masked form shown instead of the key. */
function keyLabel(key) {
    return `${exports.KEY_PREFIX}...${key.slice(-6)}`;
}
/** Prefixed random identifiers (`org_`, `usr_`, `key_`, `gen_`, `file_`). */
function newId(prefix) {
    return `${prefix}_${randomBase62(24)}`;
}
function newSecret() {
    return (0, node_crypto_1.randomBytes)(32).toString('hex');
}
