/**
 * The Response object of POST /v1/responses and GET /v1/responses/{id}, in OpenAI's shape
 * (https://platform.openai.com/docs/api-reference/responses/object) plus the `switchyard` extension
 * (decisions.md section 6), which is on every response object.
 */
import type { FinishReason, OutputItem, TextResult, TokenLogprob } from '../providers/provider.types';
import type { ResponsesBody } from '../schemas/responses.schema';
import { publicLogprobs, type PublicLogprob, type PublicUsage } from './format-utils';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled' | 'incomplete';
export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface PublicError {
  code: string;
  message: string;
  metadata?: Record<string, unknown>;
}

export interface OutputTextPart {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs: PublicLogprob[];
}

export type PublicOutputItem =
  | { type: 'message'; id: string; status: ItemStatus; role: 'assistant'; content: OutputTextPart[] }
  | { type: 'function_call'; id: string; call_id: string; name: string; arguments: string; status: ItemStatus }
  | { type: 'reasoning'; id: string; summary: Array<{ type: 'summary_text'; text: string }>; status: ItemStatus; encrypted_content?: string };

export interface ResponseObjectInput {
  id: string;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds; `completed_at` is null until the response ends. */
  completedAt?: number | null;
  /** Public model id that answered (or was asked for, while nothing has answered). */
  model: string;
  status: ResponseStatus;
  result?: TextResult;
  /** From `publicUsage`. */
  usage?: PublicUsage | Record<string, unknown> | null;
  /** The request, echoed into the object as OpenAI does. */
  request: ResponsesBody;
  error?: PublicError | null;
  warnings?: string[];
  /** Extra content of the `switchyard` object (routing details, ...). */
  switchyard?: Record<string, unknown>;
  /** The tier the provider says served the response (the result's); null while it has not answered, or when it does not say. */
  serviceTier?: string | null;
}

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  background: boolean;
  error: PublicError | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  max_tool_calls: number | null;
  model: string;
  output: PublicOutputItem[];
  output_text: string;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  prompt_cache_key: string | null;
  reasoning: Record<string, unknown>;
  safety_identifier: string | null;
  service_tier: string | null;
  store: boolean;
  temperature: number | null;
  text: Record<string, unknown>;
  tool_choice: unknown;
  tools: unknown[];
  top_logprobs: number;
  top_p: number | null;
  truncation: 'auto' | 'disabled';
  usage: PublicUsage | Record<string, unknown> | null;
  user: string | null;
  metadata: Record<string, string>;
  completed_at: number | null;
  switchyard: Record<string, unknown>;
}

/** Finish reasons that make a finished response `incomplete`, with OpenAI's `incomplete_details.reason`. */
export const INCOMPLETE_REASONS: ReadonlyMap<FinishReason, 'max_output_tokens' | 'content_filter'> = new Map([
  ['length', 'max_output_tokens'],
  ['content_filter', 'content_filter'],
] as const);

export function outputTextPart(text: string, logprobs?: readonly TokenLogprob[]): OutputTextPart {
  return { type: 'output_text', text, annotations: [], logprobs: logprobs ? publicLogprobs(logprobs) : [] };
}

/** One canonical output item in the public shape; `logprobs` go to the first text part of a message. */
export function publicOutputItem(item: OutputItem, status: ItemStatus, logprobs?: readonly TokenLogprob[]): PublicOutputItem {
  switch (item.type) {
    case 'message':
      return {
        type: 'message',
        id: item.id,
        status,
        role: 'assistant',
        content: item.content.map((c, i) => outputTextPart(c.text, i === 0 ? logprobs : undefined)),
      };
    case 'function_call':
      return { type: 'function_call', id: item.id, call_id: item.call_id, name: item.name, arguments: item.arguments, status };
    case 'reasoning':
      return {
        type: 'reasoning',
        id: item.id,
        summary: item.summary.map((s) => ({ type: 'summary_text', text: s.text })),
        status,
        ...(item.encrypted_content !== undefined && { encrypted_content: item.encrypted_content }),
      };
  }
}

/** OpenAI's `incomplete_details.reason` when the answer was cut by the token limit or a content filter. */
export function incompleteReason(result: TextResult | undefined): 'max_output_tokens' | 'content_filter' | undefined {
  return result ? INCOMPLETE_REASONS.get(result.finishReason) : undefined;
}

/**
 * The caller picks `status` (OpenAI answers `incomplete` for a cut answer; `incompleteReason` tells when);
 * `incomplete_details` follows the result's finish reason whatever the status.
 */
export function buildResponseObject(a: ResponseObjectInput): ResponseObject {
  const reason = incompleteReason(a.result);
  const messageStatus: ItemStatus = a.status === 'incomplete' ? 'incomplete' : 'completed';
  let logprobsPlaced = false;
  const output = (a.result?.output ?? []).map((item) => {
    const give = item.type === 'message' && !logprobsPlaced ? a.result?.logprobs : undefined;
    if (item.type === 'message') logprobsPlaced = true;
    // Only the text can be cut short; calls and reasoning that made it into the result are whole.
    return publicOutputItem(item, item.type === 'message' ? messageStatus : 'completed', give);
  });
  return responseEnvelope({ ...a, serviceTier: a.result?.serviceTier }, a.status, output, reason ? { reason } : null);
}

/** The object around a given output (the stream formatter builds its own output items). */
export function responseEnvelope(
  a: Omit<ResponseObjectInput, 'result' | 'status'>,
  status: ResponseStatus,
  output: PublicOutputItem[],
  incompleteDetails: ResponseObject['incomplete_details'] = null,
): ResponseObject {
  const r = a.request;
  const switchyard: Record<string, unknown> = { ...a.switchyard };
  if (a.warnings && a.warnings.length > 0) switchyard.warnings = [...a.warnings];
  // What the OpenAI SDK computes as `response.output_text`: every output_text of every message, joined.
  let outputText = '';
  for (const item of output) if (item.type === 'message') for (const c of item.content) outputText += c.text;
  return {
    id: a.id,
    object: 'response',
    created_at: a.createdAt,
    status,
    background: r.background ?? false,
    error: a.error ?? null,
    incomplete_details: incompleteDetails,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    max_tool_calls: r.max_tool_calls ?? null,
    model: a.model,
    output,
    output_text: outputText,
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: r.previous_response_id ?? null,
    prompt_cache_key: r.prompt_cache_key ?? null,
    reasoning: { effort: null, summary: null, ...r.reasoning },
    safety_identifier: r.safety_identifier ?? null,
    service_tier: a.serviceTier ?? null,
    store: r.store ?? true,
    temperature: r.temperature ?? null,
    text: { format: { type: 'text' }, verbosity: 'medium', ...r.text },
    tool_choice: r.tool_choice ?? 'auto',
    tools: r.tools ?? [],
    top_logprobs: r.top_logprobs ?? 0,
    top_p: r.top_p ?? null,
    truncation: r.truncation ?? 'disabled',
    usage: a.usage ?? null,
    user: r.user ?? null,
    metadata: r.metadata ?? {},
    completed_at: a.completedAt ?? null,
    switchyard,
  };
}
