"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.geminiAdapter = void 0;
const request_mapper_1 = require("./request.mapper");
const response_mapper_1 = require("./response.mapper");
const stream_mapper_1 = require("./stream.mapper");
exports.geminiAdapter = {
    kind: 'gemini',
    supports: { text: true, textStream: true, embeddings: true, images: false, logprobs: true, structuredOutput: true },
    extractError: response_mapper_1.extractGeminiError,
    text: {
        buildRequest: request_mapper_1.buildGenerateContentRequest,
        parseResponse: response_mapper_1.parseGenerateContent,
        createStreamParser: stream_mapper_1.createGeminiStreamParser,
    },
    embeddings: { buildRequest: request_mapper_1.buildBatchEmbedRequest, parseResponse: response_mapper_1.parseBatchEmbed },
};
