"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.embeddingsRoutes = embeddingsRoutes;
const express_1 = require("express");
const app_error_1 = require("../../shared/errors/app-error");
const ajv_1 = require("../../shared/schemas/ajv");
const embeddings_schema_1 = require("../../shared/schemas/embeddings.schema");
const formats_1 = require("../../shared/formats");
const caller_1 = require("./caller");
/** POST /v1/embeddings: strings, string arrays and multimodal blocks; float or base64 (little-endian float32). */
function embeddingsRoutes(d) {
    const r = (0, express_1.Router)();
    r.post('/v1/embeddings', ...d.guard, async (req, res) => {
        const body = (0, ajv_1.check)(embeddings_schema_1.embeddingsSchema, req.body ?? {});
        const issues = (0, embeddings_schema_1.embeddingsInputIssues)(body.input);
        if (issues.length)
            throw app_error_1.AppError.validation(issues);
        const { id, payload: p } = await d.embeddings.embed((0, caller_1.callerOf)(res), body);
        res.json((0, formats_1.buildEmbeddingList)({ id, model: p.model, result: p.result, encoding: body.encoding_format ?? 'float', usage: (0, formats_1.embeddingUsage)(p.result.usage.inputTokens, p.cost) }));
    });
    return r;
}
