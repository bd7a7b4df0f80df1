"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.anthropicAdapter = void 0;
const request_mapper_1 = require("./request.mapper");
const response_mapper_1 = require("./response.mapper");
const stream_mapper_1 = require("./stream.mapper");
exports.anthropicAdapter = {
    kind: 'anthropic',
    supports: { text: true, textStream: true, embeddings: false, images: false, logprobs: false, structuredOutput: false },
    extractError: response_mapper_1.extractAnthropicError,
    text: {
        buildRequest: request_mapper_1.buildMessagesRequest,
        parseResponse: response_mapper_1.parseMessage,
        createStreamParser: stream_mapper_1.createAnthropicStreamParser,
    },
};
