import { ERROR_CODES, REASON_CODES, type ErrorCode, type ErrorReason } from './error-codes';

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

/** The one error class: a known failure with its code; anything else becomes INTERNAL_ERROR. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
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

  static validation(errors: ValidationIssue[], message = 'Invalid request: check parameters and body'): AppError {
    return new AppError('BAD_REQUEST', message, { details: { errors }, metadata: { reason: 'validation_failed' } });
  }

  /** The JSON body of decisions.md section 3. */
  toBody(traceId: string): { error: Record<string, unknown>; trace_id: string } {
    const error: Record<string, unknown> = { code: this.code, message: this.message, trace_id: traceId };
    if (this.details && this.status < 500) error.details = this.details;
    if (this.metadata) error.metadata = this.metadata;
    return { error, trace_id: traceId };
  }
}

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}
