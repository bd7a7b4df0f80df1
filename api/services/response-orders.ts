import { parametersIgnored } from '../../shared/routing';
import { itemReferenceIds, responsesToCanonical } from '../../shared/formats';
import type { ResponsesBody } from '../../shared/schemas/responses.schema';
import { unstoredBody, type StoredResponses, type StoredResponsesRequest } from './stored-responses';
import { textRouting, type TextService, type TextSubmitted } from './text.service';
import type { Caller } from './generation-order';
import type { PlannedRoute } from './route-planner';

const withoutReasoning = ({ reasoning: _reasoning, ...rest }: ResponsesBody): ResponsesBody => rest;

/**
 * A validated Responses API body as a text generation: its conversation (the previous response's turns, the item
 * references) mapped, routed, reserved and enqueued. POST /v1/responses (sync, stream, background) and a batch's
 * `/v1/responses` lines both order theirs here. `record` is what the generation keeps of the request.
 */
export async function orderResponse(
  d: { text: TextService; stored: StoredResponses },
  c: Caller,
  body: ResponsesBody,
  o: { id: string; mode: 'sync' | 'stream' | 'async' | 'batch' },
): Promise<TextSubmitted & { record: (route: PlannedRoute) => StoredResponsesRequest }> {
  const prior = body.previous_response_id ? await d.stored.history(c.principal, body.previous_response_id) : [];
  const references = await d.stored.resolve(c.principal, itemReferenceIds(body.input));
  const { requestedParameters, warnings: formatWarnings, ...request } = responsesToCanonical(body, prior, references);
  // `store: false`: the record keeps what billing and history need, not the conversation (nor the instructions).
  // A reasoning effort no endpoint of the model takes is dropped with a warning, and not echoed either.
  const record = (route: PlannedRoute): StoredResponsesRequest => {
    const kept = parametersIgnored(route.plan).includes('reasoning') ? withoutReasoning(body) : body;
    return body.store === false ? { body: unstoredBody(kept), input: [] } : { body: kept, input: request.input, inputStart: prior.length };
  };
  const submitted = await d.text.submit({
    id: o.id,
    ...c,
    ...textRouting(body),
    apiType: 'responses',
    mode: o.mode,
    request,
    requestedParameters,
    warnings: formatWarnings,
    record,
    previousResponseId: body.previous_response_id ?? undefined,
    store: body.store !== false,
  });
  return { ...submitted, record };
}
