/**
 * OpenTelemetry traces, behind one seam (docs/observability.md). Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set
 * (Config.tracing): then `startTracing` returns undefined, no OpenTelemetry SDK module is loaded, and the request path
 * pays one check of that undefined. On, the SDK (otel-sdk.ts, loaded here and nowhere else) exports the spans over
 * OTLP/HTTP (JSON).
 *
 * A trace crosses processes as a W3C `traceparent`: the API's request span names itself in the job
 * (GenerationJobBase.traceparent), and the worker starts its spans (queue wait, provider attempts, settlement) under it.
 * No context manager: every span is started under the traceparent it is given (an AsyncLocalStorage would turn on
 * promise hooks for every promise in the process).
 */
import type { TracingSettings } from '../config/env';
import type { Tracing } from './tracing.types';

export type { SpanAttributes, SpanOptions, TraceSpan, Tracing } from './tracing.types';

/** The process's tracing when the configuration asks for it, else undefined (and nothing of the SDK is loaded). */
export function startTracing(settings: TracingSettings | undefined): Tracing | undefined {
  if (!settings) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createOtelTracing } = require('./otel-sdk') as typeof import('./otel-sdk');
  return createOtelTracing(settings);
}

/**
 * The GenAI semantic conventions' attribute names (OpenTelemetry semconv 1.37+: `gen_ai.provider.name` replaced
 * `gen_ai.system`), and ours.
 */
export const ATTR = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  errorType: 'error.type',
  generationId: 'switchyard.generation_id',
  model: 'switchyard.model',
  endpoint: 'switchyard.endpoint',
  costRub: 'switchyard.cost_rub',
} as const;

/** The semconv operation of each attempt-loop operation. */
export const GEN_AI_OPERATION: Record<string, string> = { text: 'chat', embeddings: 'embeddings', image: 'generate_content', video: 'generate_content', audio: 'generate_content', upscale: 'generate_content' };

/** The semconv's well-known provider names where they differ from our provider kinds. */
const PROVIDER_NAMES: Record<string, string> = { gemini: 'gcp.gemini' };

export function genAiProviderName(kind: string): string {
  return PROVIDER_NAMES[kind] ?? kind;
}

/** What an answered attempt reports for its span: the model that answered and the tokens counted. */
export interface GenAiUsage {
  responseModel?: string;
  responseId?: string;
  finishReason?: string;
  inputTokens?: number;
  outputTokens?: number;
}
