"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.typedQuestionsRoutes = typedQuestionsRoutes;
const express_1 = require("express");
const typed_questions_schema_1 = require("../../shared/schemas/typed-questions.schema");
const format_utils_1 = require("../../shared/formats/format-utils");
const caller_1 = require("./caller");
/** POST /v1/systemone: typed questions over a state, answered from top log-probabilities (decisions.md section 6). */
function typedQuestionsRoutes(d) {
    const r = (0, express_1.Router)();
    r.post('/v1/systemone', ...d.guard, async (req, res) => {
        const body = (0, typed_questions_schema_1.parseTypedQuestionsBody)(req.body ?? {});
        const { id, payload: p } = await d.questions.ask((0, caller_1.callerOf)(res), body);
        res.json({
            id,
            model: p.model,
            answers: p.answers,
            usage: { input_tokens: p.usage.inputTokens, output_tokens: p.usage.outputTokens, cost_rub: (0, format_utils_1.moneyJson)(p.cost) },
        });
    });
    return r;
}
