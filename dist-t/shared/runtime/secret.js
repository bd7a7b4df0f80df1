"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.secretFile = secretFile;
exports.resolveSecret = resolveSecret;
const node_crypto_1 = require("node:crypto");
const node_fs_1 = __importDefault(require("node:fs"));
const node_path_1 = __importDefault(require("node:path"));
/** Where the generated secret lives: `<homeDir>/secret` (./.switchyard/secret by default). */
function secretFile(config) {
    return node_path_1.default.join(config.homeDir, 'secret');
}
/**
 * The secret that signs personal-account tokens (decisions.md section 1): SWITCHYARD_SECRET when set, else
 * the one in `<homeDir>/secret`, generated (32 random bytes, hex, mode 0600) on first use. The service and
 * the CLI call this, so tokens printed by the CLI verify in the service.
 */
function resolveSecret(config) {
    if (config.secret)
        return config.secret;
    const file = secretFile(config);
    const existing = readSecret(file);
    if (existing)
        return existing;
    node_fs_1.default.mkdirSync(config.homeDir, { recursive: true });
    const secret = (0, node_crypto_1.randomBytes)(32).toString('hex');
    try {
        // 'wx': if two processes generate at once, the first one wins and the other reads it.
        node_fs_1.default.writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
        node_fs_1.default.chmodSync(file, 0o600);
        return secret;
    }
    catch (e) {
        if (e.code !== 'EEXIST')
            throw new Error(`cannot write ${file}: ${e.message}`);
        const other = readSecret(file);
        if (!other)
            throw new Error(`${file} is empty: delete it (a new secret is generated) or set SWITCHYARD_SECRET`);
        return other;
    }
}
function readSecret(file) {
    try {
        return node_fs_1.default.readFileSync(file, 'utf8').trim() || undefined;
    }
    catch (e) {
        if (e.code === 'ENOENT')
            return undefined;
        throw new Error(`cannot read ${file}: ${e.message}`);
    }
}
