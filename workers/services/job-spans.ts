/**
 * The worker's spans of a request's trace (shared/telemetry; docs/observability.md), started under the traceparent
 * its job carries: the wait in the queue, each provider attempt, the settlement. A job without one (tracing off in
 * the API, or a job enqueued before it was on) records none.
 */
import type { Processor } from 'bullmq';
import type { Tracing, TraceSpan, GenAiUsage } from '../../shared/telemetry/tracing';
import { ATTR, GEN_AI_OPERATION, genAiProviderName } from '../../shared/telemetry/tracing';
import type { GenerationJobBase } from '../../shared/queue/job-catalog';
import { runOf } from '../../shared/queue/claims';
import type { EndpointCall, Operation } from './attempt-failures';

/**
 * With tracing on, a generation job's first pick-up records its wait in the queue (from the enqueue to the pick-up);
 * a media job's later steps and re-runs record none. Tracing off, `processor` itself.
 */
export function withQueueWaitSpan(tracing: Tracing | undefined, processor: Processor): Processor {
  if (!tracing) return processor;
  return (job, token) => {
    const data = job.data as GenerationJobBase & { step?: unknown };
    if (data.traceparent && runOf(job).first && !data.step) {
      const span = tracing.start('switchyard.queue_wait', data.traceparent, {
        startTime: job.timestamp,
        attributes: { 'messaging.system': 'bullmq', 'messaging.destination.name': job.queueName, [ATTR.generationId]: data.generationId },
      });
      span.end(Math.max(job.timestamp, job.processedOn ?? Date.now()));
    }
    return processor(job, token);
  };
}

/**
 * One look at an asynchronous media task (a poll of the provider's task) as a client span under the request's trace:
 * the endpoint, the task and the poll's number; `seen` records the task's status, `failed` a poll that did not answer.
 * Undefined when this job is not traced.
 */
export function pollSpan(tracing: Tracing | undefined, job: Pick<GenerationJobBase, 'traceparent' | 'generationId'>, slug: string, taskId: string, poll: number): TraceSpan | undefined {
  if (!tracing || !job.traceparent) return undefined;
  return tracing.start('switchyard.media_poll', job.traceparent, {
    kind: 'client',
    attributes: { [ATTR.generationId]: job.generationId, [ATTR.endpoint]: slug, 'switchyard.task_id': taskId, 'switchyard.poll': poll },
  });
}

/**
 * One provider attempt as a span of the request's trace (tracing on, and the job carries its `traceparent`): a client
 * span named by the GenAI semantic conventions (`chat gpt-4.1-mini`), with the operation, the provider, the requested
 * and answering model and the tokens counted; a failed attempt ends with error status and its reason as `error.type`.
 */
export class AttemptSpan {
  private constructor(private readonly span: TraceSpan, private readonly requestModel: string) {}

  /** The span of a call about to be made, or undefined when this job is not traced. */
  static start(tracing: Tracing | undefined, job: Pick<GenerationJobBase, 'traceparent' | 'generationId'>, operation: Operation, call: EndpointCall, question?: string): AttemptSpan | undefined {
    if (!tracing || !job.traceparent) return undefined;
    const op = GEN_AI_OPERATION[operation] ?? operation;
    const model = call.resolved.endpoint.upstreamModel;
    const span = tracing.start(`${op} ${model}`, job.traceparent, {
      kind: 'client',
      attributes: {
        [ATTR.operation]: op,
        [ATTR.provider]: genAiProviderName(call.resolved.provider.kind),
        [ATTR.requestModel]: model,
        [ATTR.model]: call.candidate.model,
        [ATTR.endpoint]: call.candidate.slug,
        [ATTR.generationId]: job.generationId,
        'switchyard.question': question,
      },
    });
    return new AttemptSpan(span, model);
  }

  answered(usage: GenAiUsage | undefined): void {
    this.span.set({
      [ATTR.responseModel]: usage?.responseModel ?? this.requestModel,
      [ATTR.responseId]: usage?.responseId,
      [ATTR.finishReasons]: usage?.finishReason === undefined ? undefined : [usage.finishReason],
      [ATTR.inputTokens]: usage?.inputTokens,
      [ATTR.outputTokens]: usage?.outputTokens,
    });
    this.span.end();
  }

  failed(message: string, reason: string, status?: number): void {
    if (status !== undefined) this.span.set({ 'http.response.status_code': status });
    this.span.fail(message, reason);
    this.span.end();
  }
}
