/**
 * How a chunk's run tells, among the batches its provider lists, the one an earlier run created and never recorded
 * (adapter.types.ts `BatchApiOperation.find`; docs/batches.md "Crashes"). Pure.
 */
import type { BatchMatch, ListedBatch, SoughtBatch } from './adapter.types';
import { malformed, rec, str, type Json } from './mapper-utils';

/**
 * A page of a provider's batch list shaped `{data, has_more, last_id}` (OpenAI's and Anthropic's, newest first): each
 * batch in our words (`read`: what the provider says of it beyond its id), and the next page (`has_more`: after its
 * last id).
 */
export function parseListPage(json: unknown, provider: string, read: (batch: Json) => Omit<ListedBatch, 'id' | 'raw'>): { batches: ListedBatch[]; next?: string } {
  const body = rec(json);
  if (!Array.isArray(body.data)) return malformed(`${provider} batch list without data`, json);
  const data = body.data as unknown[];
  const batches: ListedBatch[] = [];
  for (const raw of data) {
    const id = str(rec(raw).id);
    if (id) batches.push({ id, raw, ...read(rec(raw)) });
  }
  const last = str(body.last_id) ?? str(rec(data.at(-1)).id);
  return { batches, ...(body.has_more === true && last && { next: last }) };
}

/** Where the provider keeps our tag with the batch (OpenAI `metadata`): the batch tagged with the chunk's id is proof. */
export function matchByTag(listed: readonly ListedBatch[], sought: SoughtBatch): BatchMatch {
  const batch = listed.find((b) => b.tag === sought.tag && !sought.known.has(b.id));
  return batch ? { batch, candidates: [batch.id] } : { candidates: [] };
}

/**
 * Where batches carry no tag (Anthropic): the batch's shape. It fits when it was created in the window, holds as many
 * requests as the create could have carried and no chunk recorded it. Taken only when it is the one batch that fits,
 * the pages reach back past the window's start, and no other chunk in `submitting` could have made it (its create may
 * be on its way as we look): otherwise nothing is taken, and the fits are named as candidates.
 */
export function matchByShape(listed: readonly ListedBatch[], sought: SoughtBatch): BatchMatch {
  const fits = listed.filter(
    (b) =>
      b.createdMs !== undefined &&
      b.requests !== undefined &&
      b.createdMs >= sought.sinceMs &&
      b.createdMs <= sought.untilMs &&
      b.requests >= sought.minLines &&
      b.requests <= sought.maxLines &&
      !sought.known.has(b.id),
  );
  const candidates = fits.map((b) => b.id);
  const [only] = fits;
  if (fits.length !== 1 || !sought.complete) return { candidates };
  const theirs = sought.others.some((o) => only.createdMs! >= o.sinceMs && only.requests! <= o.maxLines);
  return theirs ? { candidates } : { batch: only, candidates };
}
