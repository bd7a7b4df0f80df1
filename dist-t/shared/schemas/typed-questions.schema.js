"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.typedQuestionsSchema = exports.QUESTION_TYPES = exports.MAX_LABELS = exports.MIN_LABELS = exports.MAX_INSTRUCTIONS = exports.MAX_QUESTION_NAME = exports.QUESTION_NAME = exports.MAX_QUESTIONS = void 0;
exports.parseTypedQuestionsBody = parseTypedQuestionsBody;
/**
 * POST /v1/systemone body (interface.md "Typed-question answer", decisions.md section 6): a free-form `state`,
 * a `model`, 1..32 named questions and the routing object without `data_residency`.
 */
const app_error_1 = require("../errors/app-error");
const ajv_1 = require("./ajv");
const routing_schema_1 = require("./routing.schema");
/** decisions.md section 6: at most 32 questions a request. */
exports.MAX_QUESTIONS = 32;
exports.QUESTION_NAME = '^[A-Za-z0-9_.-]+$';
exports.MAX_QUESTION_NAME = 64;
exports.MAX_INSTRUCTIONS = 4000;
/** Labels a `choice` or `score` question may have (each maps to one answer token: see typed-questions.mapper.ts). */
exports.MIN_LABELS = 2;
exports.MAX_LABELS = 20;
const MAX_LABEL = 200;
const MAX_DESCRIPTION = 2000;
exports.QUESTION_TYPES = ['noul', 'choice', 'score'];
const typeIs = (value) => ({ required: ['type'], properties: { type: { const: value } } });
const question = {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'instructions'],
    properties: {
        type: { enum: [...exports.QUESTION_TYPES] },
        instructions: { type: 'string', minLength: 1, maxLength: exports.MAX_INSTRUCTIONS },
        criteria: { type: ['object', 'array'] },
    },
    allOf: [
        // noul: a yes/no question has no labels.
        { if: typeIs('noul'), then: { properties: { criteria: false } } },
        {
            if: typeIs('choice'),
            then: {
                required: ['criteria'],
                properties: {
                    criteria: {
                        type: 'object',
                        minProperties: exports.MIN_LABELS,
                        maxProperties: exports.MAX_LABELS,
                        propertyNames: { minLength: 1, maxLength: MAX_LABEL },
                        additionalProperties: { type: 'string', maxLength: MAX_DESCRIPTION },
                    },
                },
            },
        },
        {
            if: typeIs('score'),
            then: {
                required: ['criteria'],
                properties: {
                    criteria: { type: 'array', minItems: exports.MIN_LABELS, maxItems: exports.MAX_LABELS, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: MAX_LABEL } },
                },
            },
        },
    ],
};
exports.typedQuestionsSchema = {
    $id: 'SystemoneRequest',
    type: 'object',
    additionalProperties: false,
    required: ['state', 'model', 'questions'],
    properties: {
        state: { type: 'object' },
        model: { type: 'string', minLength: 1, maxLength: 512 },
        questions: {
            type: 'object',
            minProperties: 1,
            maxProperties: exports.MAX_QUESTIONS,
            propertyNames: { minLength: 1, maxLength: exports.MAX_QUESTION_NAME, pattern: exports.QUESTION_NAME },
            additionalProperties: question,
        },
        provider: routing_schema_1.typedQuestionRoutingSchema,
    },
};
const NAME_RE = new RegExp(exports.QUESTION_NAME);
/** Issues of the question names, each at `/questions/<name>` (Ajv's `propertyNames` only names `/questions`). */
function nameIssues(body) {
    const questions = body?.questions;
    if (!questions || typeof questions !== 'object' || Array.isArray(questions))
        return [];
    return Object.keys(questions)
        .filter((n) => n.length === 0 || n.length > exports.MAX_QUESTION_NAME || !NAME_RE.test(n))
        .map((n) => ({ path: `/questions/${n}`, message: `question names are 1..${exports.MAX_QUESTION_NAME} characters of A-Z, a-z, 0-9, '_', '.', '-'` }));
}
/** What Ajv says about a bad question name, replaced by `nameIssues`. */
const PROPERTY_NAME_MESSAGE = /^(property name must be valid|must match pattern|must NOT have (more|fewer) than \d+ characters)/;
/** Validates the body; 400 with `details.errors` naming each offending path. */
function parseTypedQuestionsBody(value) {
    const names = nameIssues(value);
    try {
        (0, ajv_1.check)(exports.typedQuestionsSchema, value);
    }
    catch (e) {
        if (!(0, app_error_1.isAppError)(e) || !e.details)
            throw e;
        const rest = names.length ? e.details.errors.filter((i) => !(i.path === '/questions' && PROPERTY_NAME_MESSAGE.test(i.message))) : e.details.errors;
        throw app_error_1.AppError.validation([...names, ...rest]);
    }
    if (names.length)
        throw app_error_1.AppError.validation(names);
    return value;
}
