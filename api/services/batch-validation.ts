import { createHash } from 'node:crypto';
import { AppError, isAppError, paramOf } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { batchLineSchema, type BatchLine } from '../../shared/schemas/batches.schema';
import { readLines } from '../../shared/services/jsonl';
import { storableBody, type BatchLineKind } from './batch-lines';

/** One problem of an input file, as the batch's `errors.data` lists it (OpenAI's shape; `line` is 1-based). */
export interface BatchInputError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

/** The errors listed at most (a file with more is as failed; the first ones say why). */
const MAX_ERRORS = 100;

/**
 * Every line of an input file checked before any runs (decisions.md section 7): JSON, `{custom_id, method: "POST",
 * url, body}`, `url` the batch's endpoint, `custom_id` unique in the file, `body` what the endpoint's route accepts
 * (its schema and canonical mapper) and not streamed. Streams the file: memory holds one line and a digest of each
 * custom_id seen. A line longer than a request body may be (`maxLineBytes`, MAX_BODY_BYTES) is not checked past its
 * `custom_id`, `method` and `url`: it runs as its call would, answering 413 (batch-input.ts).
 */
export async function validateInput(body: NodeJS.ReadableStream, endpoint: string, kind: BatchLineKind, maxLineBytes: number): Promise<{ errors: BatchInputError[]; total: number }> {
  const errors: BatchInputError[] = [];
  const seen = new Set<string>();
  let total = 0;
  const fail = (line: number, code: string, message: string, param: string | null = null) => {
    if (errors.length < MAX_ERRORS) errors.push({ code, message, param, line });
  };
  for await (const l of readLines(body)) {
    if (!l.text.trim()) continue;
    total++;
    let parsed: unknown;
    try {
      parsed = JSON.parse(l.text);
    } catch {
      fail(l.number, 'invalid_json_line', 'This line is not valid JSON');
      continue;
    }
    try {
      const line = check<BatchLine>(batchLineSchema, parsed);
      // A digest, not the id: 50,000 ids of up to 512 characters would hold 25 MB.
      const id = createHash('sha1').update(line.custom_id).digest('base64');
      if (seen.has(id)) fail(l.number, 'duplicate_custom_id', `custom_id ${JSON.stringify(line.custom_id)} is used by an earlier line`, 'custom_id');
      seen.add(id);
      if (line.url !== endpoint) {
        fail(l.number, 'invalid_url', `url ${JSON.stringify(line.url)} is not the batch's endpoint ${endpoint}`, 'url');
        continue;
      }
      if (l.bytes > maxLineBytes) continue;
      storableBody(line.body);
      kind.check(line.body);
    } catch (e) {
      if (!isAppError(e)) throw e;
      fail(l.number, 'invalid_request', e.message, paramOf(firstPath(e)));
    }
  }
  if (total === 0) errors.push({ code: 'empty_file', message: 'The input file has no lines', param: 'input_file_id', line: null });
  return { errors, total };
}

const firstPath = (e: AppError) => (e.details?.errors?.[0] as { path?: string } | undefined)?.path;
