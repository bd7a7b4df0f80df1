import type { TextRequest } from './provider.types';

/**
 * Per-model rules are tables of model families (shared/providers/<kind>/model-rules.ts): a family is matched by the
 * longest prefix of the provider's model name, so `gemini-2.5-flash-lite` finds its own row before `gemini-2.5-flash`.
 */
export interface ModelFamily {
  prefix: string;
}

/** The family of `model` in a table (longest matching prefix), or undefined for a model the table does not know. */
export function familyOf<T extends ModelFamily>(table: readonly T[], model: string): T | undefined {
  let best: T | undefined;
  for (const f of table) if (model.startsWith(f.prefix) && (!best || f.prefix.length > best.prefix.length)) best = f;
  return best;
}

/** The one wording of "the model takes another value of this parameter than the caller's". */
export function replacedValueWarning(parameter: string, asked: unknown, used: unknown, model: string, why?: string): string {
  return `Value ${JSON.stringify(asked)} of parameter '${parameter}' is not offered by ${model}${why ? ` (${why})` : ''}: ${JSON.stringify(used)} was used instead`;
}

/** The one wording of "this part of the request could not be sent to the model as asked; it was left out". */
export function leftOutWarning(what: string, model: string, why: string): string {
  return `${what} was left out of the call to ${model}: ${why}`;
}

/**
 * Earlier reasoning given back in the input (reasoning items) reaches only an upstream Responses API (the openai
 * adapter's `responsesApi` endpoints); every other request leaves it out, with this one warning.
 */
export function earlierReasoningLeftOut(req: TextRequest, warnings: string[]): void {
  const n = req.input.filter((i) => i.type === 'reasoning').length;
  if (n > 0) warnings.push(leftOutWarning(`earlier reasoning (${n} input item${n === 1 ? '' : 's'})`, req.model, 'only an endpoint that speaks the Responses API takes it'));
}
