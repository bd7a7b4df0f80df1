import OpenAI from 'openai';
import { check } from '../../../shared/schemas/ajv';
import { isAppError, type ValidationIssue } from '../../../shared/errors/app-error';

/** The validation issues `check` reports for a body ([] when it is valid). */
export function issues(schema: object, value: unknown): ValidationIssue[] {
  try {
    check(schema, value);
    return [];
  } catch (e) {
    if (isAppError(e) && e.details) return e.details.errors;
    throw e;
  }
}

export const paths = (schema: object, value: unknown): string[] => issues(schema, value).map((i) => i.path);

/** An OpenAI SDK client whose every request is answered with `body` (no network). */
export function sdkAnswering(body: string, contentType: string, seen: { body?: unknown } = {}): OpenAI {
  return new OpenAI({
    apiKey: 'sk-test',
    baseURL: 'http://switchyard.test/v1',
    maxRetries: 0,
    fetch: async (_url: string | URL | Request, init?: RequestInit) => {
      seen.body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
      return new Response(body, { status: 200, headers: { 'content-type': contentType } });
    },
  });
}
