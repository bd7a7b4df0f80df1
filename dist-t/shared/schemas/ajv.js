"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.queryAjv = exports.ajv = void 0;
exports.toIssues = toIssues;
exports.check = check;
const ajv_1 = __importDefault(require("ajv"));
const ajv_formats_1 = __importDefault(require("ajv-formats"));
const app_error_1 = require("../errors/app-error");
/**
 * One Ajv instance for every request schema. The same schemas feed the OpenAPI document.
 * `coerceTypes` is off for bodies; query strings are coerced by their own instance.
 */
exports.ajv = (0, ajv_formats_1.default)(new ajv_1.default({ allErrors: true, strict: false, useDefaults: true }));
exports.queryAjv = (0, ajv_formats_1.default)(new ajv_1.default({ allErrors: true, strict: false, useDefaults: true, coerceTypes: true }));
function issuePath(e) {
    if (e.keyword === 'required')
        return `${e.instancePath}/${e.params.missingProperty}`;
    if (e.keyword === 'additionalProperties')
        return `${e.instancePath}/${e.params.additionalProperty}`;
    return e.instancePath || '/';
}
function toIssues(errors) {
    const seen = new Set();
    const out = [];
    for (const e of errors ?? []) {
        const path = issuePath(e);
        const message = e.keyword === 'additionalProperties' ? 'is not a known field' : (e.message ?? 'is invalid');
        const k = `${path} ${message}`;
        if (!seen.has(k))
            out.push({ path, message });
        seen.add(k);
    }
    return out;
}
const cache = new WeakMap();
const queryCache = new WeakMap();
/** Validates (and fills defaults into) `value`; throws 400 BAD_REQUEST with `details.errors` when invalid. */
function check(schema, value, opts = {}) {
    const store = opts.query ? queryCache : cache;
    let fn = store.get(schema);
    if (!fn) {
        fn = (opts.query ? exports.queryAjv : exports.ajv).compile(schema);
        store.set(schema, fn);
    }
    if (!fn(value))
        throw app_error_1.AppError.validation(toIssues(fn.errors));
    return value;
}
