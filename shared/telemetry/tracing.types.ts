/** The seam's types (tracing.ts): what a span and a process's tracing offer, whichever SDK is behind them (otel-sdk.ts). */

/** Attribute values as OpenTelemetry takes them (undefined ones are left out). */
export type SpanAttributes = Record<string, string | number | boolean | string[] | undefined>;

export interface SpanOptions {
  kind?: 'server' | 'client' | 'internal';
  attributes?: SpanAttributes;
  /** Milliseconds since the epoch (a span that began before it was started: the queue wait). Default: now. */
  startTime?: number;
}

export interface TraceSpan {
  /** This span as a W3C traceparent: the parent of its children, in this process or another. */
  readonly traceparent: string;
  /** The trace it belongs to (32 hex digits). */
  readonly traceId: string;
  set(attributes: SpanAttributes): void;
  rename(name: string): void;
  /** Marks the span failed (status ERROR with `message`; `error.type` when given). */
  fail(message: string, errorType?: string): void;
  /** Ends it, now or at `endTime` (ms since the epoch). */
  end(endTime?: number): void;
}

export interface Tracing {
  /** A span under `parent`, a W3C traceparent; a new trace when there is none or it does not parse. */
  start(name: string, parent: string | undefined, options?: SpanOptions): TraceSpan;
  /** Exports every ended span now. */
  flush(): Promise<void>;
  /** Flushes and stops exporting. */
  shutdown(): Promise<void>;
}
