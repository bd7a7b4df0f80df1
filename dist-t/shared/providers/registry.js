"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.providerAdapters = void 0;
exports.adapterFor = adapterFor;
const anthropic_1 = require("./anthropic");
const gemini_1 = require("./gemini");
const openai_1 = require("./openai");
const replicate_1 = require("./replicate");
exports.providerAdapters = {
    openai: openai_1.openaiAdapter,
    anthropic: anthropic_1.anthropicAdapter,
    gemini: gemini_1.geminiAdapter,
    replicate: replicate_1.replicateAdapter,
};
/** The adapter for a catalog provider's kind, or undefined when that kind has none yet. */
function adapterFor(kind) {
    return exports.providerAdapters[kind];
}
