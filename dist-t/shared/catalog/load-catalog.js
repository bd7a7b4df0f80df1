"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.CatalogError = void 0;
exports.parseCatalog = parseCatalog;
exports.loadCatalog = loadCatalog;
exports.providersWithoutKey = providersWithoutKey;
const node_fs_1 = __importDefault(require("node:fs"));
const ajv_1 = __importDefault(require("ajv"));
const catalog_schema_1 = require("./catalog.schema");
const supports_1 = require("./supports");
const catalog_types_1 = require("./catalog.types");
class CatalogError extends Error {
    problems;
    constructor(problems) {
        super(`catalog refused:\n- ${problems.join('\n- ')}`);
        this.problems = problems;
        this.name = 'CatalogError';
    }
}
exports.CatalogError = CatalogError;
const ajv = new ajv_1.default({ allErrors: true, strict: false });
const validateShape = ajv.compile(catalog_schema_1.catalogSchema);
/**
 * Validates a catalog and resolves provider keys (`apiKeyEnv`) from `keys`: Config.providerKeys, or a test's own. Every problem is named: a missing
 * provider, an unknown kind, a negative price, a duplicate id (decisions.md section 1).
 */
function parseCatalog(raw, keys, sourceText) {
    const problems = [];
    if (!validateShape(raw)) {
        for (const e of validateShape.errors ?? [])
            problems.push(`${e.instancePath || '/'} ${e.message}`);
        throw new CatalogError(problems);
    }
    const data = raw;
    if (sourceText)
        problems.push(...findDuplicateKeys(sourceText));
    // Null-prototype maps: an id such as `valueOf` or `__proto__` must never find something inherited.
    const providers = Object.create(null);
    for (const [id, p] of Object.entries(data.providers)) {
        if (!catalog_types_1.PROVIDER_KINDS.includes(p.kind))
            problems.push(`provider "${id}": unknown kind "${p.kind}" (known: ${catalog_types_1.PROVIDER_KINDS.join(', ')})`);
        providers[id] = { ...p, id, kind: p.kind, timeoutMs: p.timeoutMs ?? 60_000, apiKey: p.apiKeyEnv ? keys[p.apiKeyEnv] || undefined : undefined };
    }
    const models = Object.create(null);
    for (const [id, m] of Object.entries(data.models)) {
        const slugs = new Set();
        const endpoints = m.endpoints.map((e, i) => {
            if (!providers[e.provider])
                problems.push(`model "${id}" endpoint ${i}: provider "${e.provider}" is not defined`);
            const slug = `${id}:${e.provider}`;
            if (slugs.has(slug))
                problems.push(`model "${id}": duplicate endpoint for provider "${e.provider}"`);
            slugs.add(slug);
            const price = {};
            for (const [field, value] of Object.entries(e.price)) {
                const text = String(value);
                if (text.startsWith('-'))
                    problems.push(`model "${id}" endpoint ${i}: negative price ${field} = ${text}`);
                price[field] = text;
            }
            return { ...e, slug, price, supports: (0, supports_1.expandSupports)(e.supports ?? []) };
        });
        models[id] = { id, displayName: m.displayName, type: m.type, endpoints };
    }
    if (problems.length)
        throw new CatalogError(problems);
    return { providers, models };
}
/** JSON.parse silently keeps the last of two equal keys; a catalog must not have any. */
function findDuplicateKeys(text) {
    const problems = [];
    const stack = [];
    const re = /"((?:[^"\\]|\\.)*)"\s*:|[{}]/g;
    let m;
    while ((m = re.exec(text))) {
        if (m[0] === '{')
            stack.push(new Set());
        else if (m[0] === '}')
            stack.pop();
        else {
            const keys = stack[stack.length - 1];
            if (!keys)
                continue;
            if (keys.has(m[1]))
                problems.push(`duplicate id "${m[1]}"`);
            keys.add(m[1]);
        }
    }
    return problems;
}
function loadCatalog(file, keys) {
    let text;
    try {
        text = node_fs_1.default.readFileSync(file, 'utf8');
    }
    catch (e) {
        throw new CatalogError([`cannot read ${file}: ${e.message}`]);
    }
    let raw;
    try {
        raw = JSON.parse(text);
    }
    catch (e) {
        throw new CatalogError([`${file} is not valid JSON: ${e.message}`]);
    }
    return parseCatalog(raw, keys, text);
}
/** Providers whose key variable is named but unset: logged at start. */
function providersWithoutKey(catalog) {
    return Object.values(catalog.providers)
        .filter((p) => p.apiKeyEnv && !p.apiKey)
        .map((p) => `${p.id} (${p.apiKeyEnv})`);
}
