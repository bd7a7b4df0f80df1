import type { Generation } from '../../shared/db/generated/client';
import { AppError, type StoredError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { chatSchema, type ChatBody } from '../../shared/schemas/chat.schema';
import { responsesSchema, type ResponsesBody } from '../../shared/schemas/responses.schema';
import { embeddingsInputIssues, embeddingsSchema, type EmbeddingsBody } from '../../shared/schemas/embeddings.schema';
import { imageGenerationSchema, type ImageGenerationBody } from '../../shared/schemas/images.schema';
import type { BatchEndpoint } from '../../shared/schemas/batches.schema';
import { buildEmbeddingList, embeddingsToCanonical } from '../../shared/formats/embeddings.mapper';
import { chatToCanonical } from '../../shared/formats/chat.mapper';
import { embeddingUsage } from '../../shared/formats/format-utils';
import { itemReferenceIds, responsesToCanonical } from '../../shared/formats/responses-request.mapper';
import { QUEUES, type QueueName } from '../../shared/queue/queue-names';
import type { EmbeddingsDonePayload, TextDonePayload } from '../../shared/queue/job-catalog';
import { jsonBodyProblem } from '../middleware/reject-nul';
import { toAppError } from '../middleware/error-handler';
import type { Caller, Submission } from './generation-order';
import { textRouting, type TextService } from './text.service';
import type { EmbeddingsService, StoredEmbeddings } from './embeddings.service';
import type { ImagesService } from './images.service';
import { responseObjectOf, type StoredResponses, orderResponse } from './stored-responses';
import { chatCompletionOf } from './text-replies';

/**
 * What a batch needs of each endpoint it may run (decisions.md section 7): the route's own checks of a line's body
 * (its ajv schema and canonical mapper, before anything runs), the order of its generation through the service the
 * route uses (mode `batch`: in the background, after interactive work), and the body the synchronous call answers,
 * from the ended generation's record.
 */
export interface BatchLineKind {
  queue: QueueName;
  /** The id prefix of its generations (a response's id is `resp_...`, as the Responses API names them). */
  idPrefix: 'resp' | 'gen';
  /** Throws the route's 400 for a body the endpoint would refuse before routing. */
  check(body: unknown): void;
  order(c: Caller, body: unknown, id: string): Promise<Submission>;
  answer(g: Generation): Promise<unknown>;
}

export interface BatchLinesDeps {
  text: TextService;
  stored: StoredResponses;
  embeddings: EmbeddingsService;
  images: ImagesService;
}

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

/** A batch runs each line as it is, never streamed: `stream: true` is refused before any line runs. */
function notStreamed(body: { stream?: boolean | null }): void {
  if (body.stream) throw AppError.validation([{ path: '/stream', message: 'must not be true in a batch' }], 'A batch line cannot be streamed');
}

/** The stored answer of a completed text generation, its cost the amount charged (as the routes answer it). */
const textPayload = (g: Generation): TextDonePayload => ({ ...(g.result as unknown as TextDonePayload), cost: g.clientCost.toFixed(10) });

export function batchLineKinds(d: BatchLinesDeps): Record<BatchEndpoint, BatchLineKind> {
  return {
    '/v1/chat/completions': {
      queue: QUEUES.text,
      idPrefix: 'gen',
      check(raw) {
        const body = check<ChatBody>(chatSchema, raw);
        notStreamed(body);
        chatToCanonical(body);
      },
      async order(c, raw, id) {
        const body = raw as ChatBody;
        const { requestedParameters, warnings, ...request } = chatToCanonical(body);
        const { submission } = await d.text.submit({
          id,
          ...c,
          ...textRouting(body),
          apiType: 'chat_completions',
          mode: 'batch',
          request,
          requestedParameters,
          warnings,
          record: { body },
          outputLimitField: body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
        });
        return submission;
      },
      async answer(g) {
        const body = (g.request as unknown as { body: ChatBody }).body;
        return chatCompletionOf(g.id, unix(g.createdAt), body.logprobs === true, textPayload(g));
      },
    },
    '/v1/responses': {
      queue: QUEUES.text,
      idPrefix: 'resp',
      check(raw) {
        const body = check<ResponsesBody>(responsesSchema, raw);
        notStreamed(body);
        if (body.background) throw AppError.validation([{ path: '/background', message: 'must not be true in a batch' }], 'A batch line runs in the background already');
        // References and a previous response are looked up when the line runs (they may be another line's answer).
        if (!body.previous_response_id && itemReferenceIds(body.input).length === 0) responsesToCanonical(body);
      },
      async order(c, raw, id) {
        const { submission } = await orderResponse(d, c, raw as ResponsesBody, { id, mode: 'batch' });
        return submission;
      },
      answer: async (g) => responseObjectOf(g),
    },
    '/v1/embeddings': {
      queue: QUEUES.embeddings,
      idPrefix: 'gen',
      check(raw) {
        const body = check<EmbeddingsBody>(embeddingsSchema, raw);
        const issues = embeddingsInputIssues(body.input);
        if (issues.length) throw AppError.validation(issues);
        embeddingsToCanonical(body);
      },
      order: (c, raw, id) => d.embeddings.order(c, raw as EmbeddingsBody, { mode: 'batch', id }),
      async answer(g) {
        // A line's request carries its Idempotency-Key, so the record keeps the vectors (`replay`).
        const p: EmbeddingsDonePayload = (g.result as unknown as StoredEmbeddings).replay;
        const encoding = (g.request as { encoding_format?: 'float' | 'base64' }).encoding_format ?? 'float';
        return buildEmbeddingList({ id: g.id, model: p.model, result: p.result, encoding, usage: embeddingUsage(p.result.usage.inputTokens, g.clientCost.toFixed(10)) });
      },
    },
    '/v1/images/generations': {
      queue: QUEUES.image,
      idPrefix: 'gen',
      check(raw) {
        check<ImageGenerationBody>(imageGenerationSchema, raw);
      },
      order: async (c, raw, id) => (await d.images.order(c, raw, { mode: 'batch', id })).sub,
      answer: (g) => d.images.resultOf(g, g.request as unknown as ImageGenerationBody),
    },
  };
}

/** A line's body may be stored (no NUL, no lone surrogate, not too deep), as the JSON body of a request must. */
export function storableBody(body: unknown): void {
  const problem = jsonBodyProblem(body);
  if (problem) throw AppError.validation([{ path: `/body${problem.path === '/' ? '' : problem.path}`, message: problem.message }]);
}

/**
 * A line whose order failed for a reason of ours (not a refusal), nothing reserved: 503 when PostgreSQL or Redis is
 * away (as the route would answer; the line is tried again), else 500.
 */
export function toLineError(e: unknown): AppError {
  const mapped = toAppError(e);
  return mapped.code === 'SERVICE_UNAVAILABLE' ? mapped : new AppError('INTERNAL_ERROR', `The line could not be started: ${(e as Error)?.message ?? String(e)}`);
}

/** The error an ended generation that did not complete answers with. */
export function lineError(g: Pick<Generation, 'status' | 'error'>): AppError {
  if (g.status === 'failed' && g.error) return AppError.fromStored(g.error as unknown as StoredError);
  return new AppError('CONFLICT', 'The generation was cancelled');
}
