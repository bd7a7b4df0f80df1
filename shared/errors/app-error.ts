import { ERROR_CODES, REASON_CODES, type ErrorCode, type ErrorReason, type ErrorType } from './error-codes';

export interface ValidationIssue {
  path: string;
  message: string;
}

export interface ErrorMetadata {
  reason?: ErrorReason;
  raw?: string;
  provider_name?: string;
  attempts?: Array<{ provider: string; reason: string; endpoint?: string; status?: number; message?: string }>;
  candidates?: unknown[];
  [key: string]: unknown;
}

/**
 * An AppError as it crosses processes: the worker's `failed` message on the generation bus and the generation's
 * `error` column (shown as is by the history). Written only by `AppError.toStored`, read back only by
 * `AppError.fromStored`.
 */
export interface StoredError {
  code: string;
  status?: number;
  message: string;
  metadata?: ErrorMetadata;
}

/** The one error class: a known failure with its code; anything else becomes INTERNAL_ERROR. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** OpenAI's error type of the code (the SDKs' `err.type`). */
  readonly type: ErrorType;
  readonly details?: { errors: ValidationIssue[] } & Record<string, unknown>;
  readonly metadata?: ErrorMetadata;
  /** Whether repeating the request can help (`x-should-retry`); from the code table. */
  readonly retry: boolean;
  /** Extra response headers, e.g. Retry-After. */
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { details?: AppError['details']; metadata?: ErrorMetadata; headers?: Record<string, string>; retry?: boolean } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.retry = opts.retry ?? ERROR_CODES[code].retry;
    this.details = opts.details;
    const reason = ERROR_CODES[code].reason;
    this.metadata = opts.metadata ?? (reason ? { reason } : undefined);
    this.headers = opts.headers;
  }

  /** An error chosen by its machine reason (e.g. `key_limit_exceeded` → 402 INSUFFICIENT_BALANCE). */
  static fromReason(reason: ErrorReason, message: string, metadata: Omit<ErrorMetadata, 'reason'> = {}): AppError {
    const code = REASON_CODES[reason] ?? 'BAD_REQUEST';
    return new AppError(code, message, { metadata: { reason, ...metadata } });
  }

  /** A 400 naming its fields in `details.errors`; the message names the first (`Invalid request: messages must not be empty`). */
  static validation(errors: ValidationIssue[], message = validationMessage(errors)): AppError {
    return new AppError('BAD_REQUEST', message, { details: { errors }, metadata: { reason: 'validation_failed' } });
  }

  /** The form it is stored and sent between processes in (see StoredError). */
  toStored(): StoredError {
    return { code: this.code, status: this.status, message: this.message, metadata: this.metadata };
  }

  /**
   * Rebuilds an error from its stored form. A code this version does not know becomes BAD_GATEWAY; a provider's
   * wait (`metadata.retry_after_seconds`, all providers rate-limited) reaches the caller as Retry-After.
   */
  static fromStored(e: StoredError): AppError {
    const code = (Object.hasOwn(ERROR_CODES, e.code) ? e.code : 'BAD_GATEWAY') as ErrorCode;
    const wait = e.metadata?.retry_after_seconds;
    const headers = typeof wait === 'number' && wait > 0 ? { 'Retry-After': String(wait) } : undefined;
    return new AppError(code, e.message, { metadata: e.metadata, headers });
  }

  /** The first failing field in the SDKs' notation (`messages[0].content`), or null. */
  get param(): string | null {
    return paramOf(this.details?.errors?.[0]?.path);
  }

  /** The JSON body of decisions.md section 3, with OpenAI's `type` and `param` beside our `code`. */
  toBody(traceId: string): { error: Record<string, unknown>; trace_id: string } {
    const error: Record<string, unknown> = { code: this.code, message: this.message, type: this.type, param: this.param, trace_id: traceId };
    if (this.details && this.status < 500) error.details = this.details;
    if (this.metadata) error.metadata = this.metadata;
    return { error, trace_id: traceId };
  }
}

/**
 * A JSON pointer of a request field (`/messages/0/content`) in OpenAI's `param` notation (`messages[0].content`); the
 * whole body (`/`) is null.
 */
export function paramOf(pointer: string | undefined): string | null {
  const parts = (pointer ?? '').split('/').slice(1).filter((p) => p !== '').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (parts.length === 0) return null;
  return parts.reduce((out, p, i) => (/^\d+$/.test(p) && i > 0 ? `${out}[${p}]` : i === 0 ? p : `${out}.${p}`), '');
}

function validationMessage(errors: ValidationIssue[]): string {
  const first = errors[0];
  if (!first) return 'Invalid request: check parameters and body';
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more in error.details)` : '';
  return `Invalid request: ${paramOf(first.path) ?? 'the body'} ${first.message}${more}`;
}

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}
