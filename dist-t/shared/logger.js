"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.redact = redact;
exports.createLogger = createLogger;
const winston_1 = __importDefault(require("winston"));
const SECRET_KEYS = /^(authorization|api[-_]?key|x-api-key|x-goog-api-key|token|ownerToken|key|secret|callbackSecret|password|cookie)$/i;
const SECRET_VALUES = /\b(sy_[A-Za-z0-9]{40}|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)\b/g;
/** Removes secrets from anything we log: known secret fields and anything shaped like our keys or tokens. */
function redact(value, depth = 0) {
    if (typeof value === 'string')
        return value.replace(SECRET_VALUES, '[redacted]');
    if (!value || typeof value !== 'object' || depth > 6)
        return value;
    if (value instanceof Error)
        return { name: value.name, message: redact(value.message), stack: value.stack };
    if (Array.isArray(value))
        return value.map((v) => redact(v, depth + 1));
    const out = {};
    for (const [k, v] of Object.entries(value))
        out[k] = SECRET_KEYS.test(k) ? '[redacted]' : redact(v, depth + 1);
    return out;
}
const redactInfo = winston_1.default.format((info) => {
    for (const k of Object.keys(info)) {
        if (k !== 'level' && k !== 'message')
            info[k] = SECRET_KEYS.test(k) ? '[redacted]' : redact(info[k]);
    }
    if (typeof info.message === 'string')
        info.message = redact(info.message);
    return info;
});
function createLogger(opts = {}) {
    return winston_1.default.createLogger({
        level: opts.level ?? 'info',
        silent: opts.silent ?? false,
        defaultMeta: { service: opts.service ?? 'switchyard' },
        format: winston_1.default.format.combine(redactInfo(), winston_1.default.format.timestamp(), winston_1.default.format.json()),
        transports: [new winston_1.default.transports.Console()],
    });
}
