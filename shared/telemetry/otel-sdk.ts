/**
 * The OpenTelemetry SDK behind tracing.ts: loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is set. One tracer provider
 * per process (owned by whoever called startTracing, never registered globally), a batch span processor, and the
 * OTLP/HTTP JSON exporter to `<endpoint>/v1/traces`. The default sampler follows the parent's sampled flag (an
 * incoming traceparent that is not sampled records nothing) and samples every new trace.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type TimeInput } from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { TracingSettings } from '../config/env';
import type { SpanAttributes, SpanOptions, TraceSpan, Tracing } from './tracing.types';

const KINDS = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const;

/** How long ended spans wait to be batched (the SDK's default is 5 s); a shutdown exports what waits. */
const EXPORT_DELAY_MS = 1000;

/** The version in Switchyard's package.json, found upward from here (source or dist/), or undefined. */
function serviceVersion(): string | undefined {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'switchyard') return pkg.version;
    } catch {
      // not here: look further up
    }
    if (path.dirname(dir) === dir) return undefined;
  }
}

/**
 * The resource every span of this process carries: the service's name and version, this process (host and pid: npm start
 * runs several), the deployment (`deployment.environment.name`) and whatever OTEL_RESOURCE_ATTRIBUTES adds or overrides.
 */
export function resourceAttributes(settings: TracingSettings): Record<string, string> {
  const version = serviceVersion();
  return {
    ...(version && { 'service.version': version }),
    'service.instance.id': `${os.hostname()}:${process.pid}`,
    'host.name': os.hostname(),
    ...settings.resourceAttributes,
    'service.name': settings.serviceName,
  };
}

export function createOtelTracing(settings: TracingSettings): Tracing {
  const exporter = new OTLPTraceExporter({ url: `${settings.endpoint}/v1/traces` });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(resourceAttributes(settings)),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  const tracer = provider.getTracer('switchyard');
  return {
    start(name, parent, options: SpanOptions = {}) {
      const parentContext = parent ? parseTraceParent(parent) : null;
      const context = parentContext ? trace.setSpanContext(ROOT_CONTEXT, parentContext) : ROOT_CONTEXT;
      const span = tracer.startSpan(
        name,
        { kind: KINDS[options.kind ?? 'internal'], attributes: options.attributes && defined(options.attributes), startTime: options.startTime as TimeInput | undefined },
        context,
      );
      return wrap(span);
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

function wrap(span: Span): TraceSpan {
  const sc = span.spanContext();
  return {
    traceparent: `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}`,
    traceId: sc.traceId,
    set: (attributes) => void span.setAttributes(defined(attributes)),
    rename: (name) => void span.updateName(name),
    fail(message, errorType) {
      span.setStatus({ code: SpanStatusCode.ERROR, message });
      if (errorType) span.setAttribute('error.type', errorType);
    },
    end: (endTime) => span.end(endTime),
  };
}

function defined(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = v;
  return out;
}
