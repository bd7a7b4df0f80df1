"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.openaiAdapter = void 0;
const request_mapper_1 = require("./request.mapper");
const response_mapper_1 = require("./response.mapper");
const stream_mapper_1 = require("./stream.mapper");
exports.openaiAdapter = {
    kind: 'openai',
    supports: { text: true, textStream: true, embeddings: true, images: true, logprobs: true, structuredOutput: true, embeddingTokens: true },
    extractError: response_mapper_1.extractOpenAIError,
    text: {
        buildRequest: request_mapper_1.buildChatCompletionRequest,
        parseResponse: response_mapper_1.parseChatCompletion,
        createStreamParser: stream_mapper_1.createOpenAIStreamParser,
    },
    embeddings: { buildRequest: request_mapper_1.buildEmbeddingRequest, parseResponse: response_mapper_1.parseEmbeddings },
    images: { buildRequest: request_mapper_1.buildImageRequest, parseResponse: response_mapper_1.parseImages },
};
