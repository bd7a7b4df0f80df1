"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.replicateAdapter = void 0;
const request_mapper_1 = require("./request.mapper");
const response_mapper_1 = require("./response.mapper");
exports.replicateAdapter = {
    kind: 'replicate',
    supports: { text: false, textStream: false, embeddings: false, images: false, logprobs: false, structuredOutput: false, media: true },
    extractError: response_mapper_1.extractReplicateError,
    media: { buildCreate: request_mapper_1.buildCreatePrediction, buildGet: request_mapper_1.buildGetPrediction, buildCancel: request_mapper_1.buildCancelPrediction, parseTask: response_mapper_1.parsePrediction },
};
