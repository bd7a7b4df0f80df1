/**
 * POST /v1/systemone body (interface.md "Typed-question answer", decisions.md section 6): a free-form `state`,
 * a `model`, 1..32 named questions and the routing object without `data_residency`.
 */
import { AppError, isAppError, type ValidationIssue } from '../errors/app-error';
import { check } from './ajv';
import { typedQuestionRoutingSchema, type TypedQuestionRouting } from './routing.schema';

/** decisions.md section 6: at most 32 questions a request. */
export const MAX_QUESTIONS = 32;
/**
 * Question names are the caller's (interface.md): any text but control characters. They key the reply's `answers`
 * and are never sent to a provider.
 */
export const QUESTION_NAME = '^[^\\x00-\\x1f\\x7f]+$';
export const MAX_QUESTION_NAME = 128;
export const MAX_INSTRUCTIONS = 4000;
/** Labels a `choice` or `score` question may have (each maps to one answer token: see typed-questions.mapper.ts). */
export const MIN_LABELS = 2;
export const MAX_LABELS = 20;
const MAX_LABEL = 200;
const MAX_DESCRIPTION = 2000;

export const QUESTION_TYPES = ['noul', 'choice', 'score'] as const;
export type QuestionType = (typeof QUESTION_TYPES)[number];

const typeIs = (value: QuestionType) => ({ required: ['type'], properties: { type: { const: value } } });

const question = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'instructions'],
  properties: {
    type: { enum: [...QUESTION_TYPES] },
    instructions: { type: 'string', minLength: 1, maxLength: MAX_INSTRUCTIONS },
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
            minProperties: MIN_LABELS,
            maxProperties: MAX_LABELS,
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
          criteria: { type: 'array', minItems: MIN_LABELS, maxItems: MAX_LABELS, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: MAX_LABEL } },
        },
      },
    },
  ],
} as const;

export const typedQuestionsSchema = {
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
      maxProperties: MAX_QUESTIONS,
      propertyNames: { minLength: 1, maxLength: MAX_QUESTION_NAME, pattern: QUESTION_NAME },
      additionalProperties: question,
    },
    provider: typedQuestionRoutingSchema,
  },
} as const;

export interface NoulQuestion {
  type: 'noul';
  instructions: string;
}
export interface ChoiceQuestion {
  type: 'choice';
  instructions: string;
  /** Label → description. */
  criteria: Record<string, string>;
}
export interface ScoreQuestion {
  type: 'score';
  instructions: string;
  /** The scale labels, lowest first. */
  criteria: string[];
}
export type TypedQuestion = NoulQuestion | ChoiceQuestion | ScoreQuestion;

export interface TypedQuestionsBody {
  state: Record<string, unknown>;
  model: string;
  questions: Record<string, TypedQuestion>;
  provider?: TypedQuestionRouting;
}

const NAME_RE = new RegExp(QUESTION_NAME);

/** Issues of the question names, each at `/questions/<name>` (Ajv's `propertyNames` only names `/questions`). */
function nameIssues(body: unknown): ValidationIssue[] {
  const questions = (body as { questions?: unknown } | null)?.questions;
  if (!questions || typeof questions !== 'object' || Array.isArray(questions)) return [];
  return Object.keys(questions)
    .filter((n) => n.length === 0 || [...n].length > MAX_QUESTION_NAME || !NAME_RE.test(n))
    .map((n) => ({ path: `/questions/${n.replace(/~/g, '~0').replace(/\//g, '~1')}`, message: `question names are 1..${MAX_QUESTION_NAME} characters, none of them a control character` }));
}

/** What Ajv says about a bad question name, replaced by `nameIssues`. */
const PROPERTY_NAME_MESSAGE = /^(property name must be valid|must match pattern|must NOT have (more|fewer) than \d+ characters)/;

/** Validates the body; 400 with `details.errors` naming each offending path. */
export function parseTypedQuestionsBody(value: unknown): TypedQuestionsBody {
  const names = nameIssues(value);
  try {
    check<TypedQuestionsBody>(typedQuestionsSchema, value);
  } catch (e) {
    if (!isAppError(e) || !e.details) throw e;
    const rest = names.length ? e.details.errors.filter((i) => !(i.path === '/questions' && PROPERTY_NAME_MESSAGE.test(i.message))) : e.details.errors;
    throw AppError.validation([...names, ...rest]);
  }
  if (names.length) throw AppError.validation(names);
  return value as TypedQuestionsBody;
}
