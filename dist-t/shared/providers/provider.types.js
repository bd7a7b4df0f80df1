"use strict";
/**
 * The canonical shapes between Switchyard and its provider adapters.
 *
 * Public formats (Responses API, chat completions, embeddings) are mapped INTO these by `shared/formats`,
 * and every adapter (`shared/providers/<kind>/`) maps these to and from its provider's wire format.
 * Field names follow OpenAI's Responses API where one exists, because that is our public contract.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_MAX_OUTPUT_TOKENS = void 0;
/**
 * Output tokens of a text request that names no maximum, on an endpoint that names none either: what its
 * reservation is sized for, how far its stream may run, and what a provider that requires a maximum is sent.
 */
exports.DEFAULT_MAX_OUTPUT_TOKENS = 4096;
