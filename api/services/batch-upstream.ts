import type { Queue } from 'bullmq';
import type { Batch } from '../../shared/db/generated/client';
import type { Catalog } from '../../shared/catalog/catalog.types';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import type { Logger } from '../../shared/logger';
import type { BatchSettings } from '../../shared/config/env';
import { addUpstreamBatchJob } from '../../shared/queue/batch-jobs';
import { promoteIfDelayed } from '../../shared/queue/promote';
import type { UpstreamBatches } from '../../shared/services/upstream-batches.service';
import type { GenerationGateway } from './generation-gateway';
import type { QueueName } from '../../shared/queue/queue-names';

export interface BatchUpstreamDeps {
  store: UpstreamBatches;
  catalog: Catalog;
  /** The `upstream_batches` queue: one job per chunk, run by the workers. */
  queue: Queue;
  gateway: GenerationGateway;
  logger: Logger;
  settings: BatchSettings;
}

/**
 * What a batch's driver does for its lines parked for providers' own batch APIs (docs/batches.md "Provider batch
 * APIs"): gathers them into chunks per endpoint and hands each chunk to the workers (a job of the `upstream_batches`
 * queue: the API process never calls a provider); stops them when the batch is cancelled or expires.
 */
export class BatchUpstream {
  constructor(private readonly d: BatchUpstreamDeps) {}

  /** The most parked lines one batch keeps in flight (beside BATCH_LINES_IN_FLIGHT ordinary ones). */
  get maxParked(): number {
    return this.d.settings.upstreamMaxLines;
  }

  /**
   * Gathers the batch's parked lines into chunks (`all`: no more lines are coming for now, so every line goes) and adds
   * the jobs of its chunks no worker has sent yet (again after a crash between the gathering and the add: a job that
   * exists is not added twice, its id being the chunk's).
   */
  async send(b: Pick<Batch, 'id' | 'organizationId' | 'traceId'>, all: boolean): Promise<void> {
    const made = await this.d.store.gather(b.id, {
      maxLines: this.d.settings.upstreamMaxLines,
      gatherMs: this.d.settings.upstreamGatherMs,
      all,
      providerOf: (slug) => endpointBySlug(this.d.catalog, slug)?.provider.id ?? slug.slice(slug.lastIndexOf(':') + 1),
    });
    const unsent = made.length ? made : await this.d.store.unsent(b.id);
    for (const u of unsent) await addUpstreamBatchJob(this.d.queue, u, b.traceId);
  }

  /**
   * The driver's idle rule (docs/batches.md "Provider batch APIs", the driver's pace): whether a step leaves nothing to do but wait for providers'
   * batch APIs. True when the step answered and started nothing, no line can be taken now (the input is exhausted or
   * the in-flight cap reached), every line in flight is parked, and every parked line is in a chunk a worker holds
   * (none loose for `send` to gather, none fallen back to its ordinary job). Nothing then changes before a chunk ends,
   * and its job wakes the driver when it does (UpstreamBatchRunner), so the driver may wait up to
   * BATCH_UPSTREAM_POLL_MS between steps instead of BATCH_POLL_MS.
   */
  async idle(step: { moved: boolean; takeable: boolean; inFlight: number; parked: readonly string[] }): Promise<boolean> {
    if (step.moved || step.takeable || step.parked.length === 0 || step.parked.length !== step.inFlight) return false;
    return (await this.d.store.held(step.parked)) === step.parked.length;
  }

  /**
   * Which of these parked lines a stop reaches through the provider path: loose, or in a chunk not done. The others still
   * running fell back to their ordinary jobs (their chunk is done), and stop as any running line does.
   */
  onPath(generationIds: readonly string[]): Promise<Set<string>> {
    return this.d.store.waiting(generationIds);
  }

  /**
   * The batch stops (cancelled or expired): its parked lines no chunk holds never go upstream (cancelled, uncharged);
   * its chunks are cancelled upstream by their workers, woken now (a chunk job waiting for its next poll runs at once).
   */
  async stop(b: Pick<Batch, 'id'>, queue: QueueName): Promise<void> {
    for (const id of await this.d.store.unpark(b.id)) await this.d.gateway.cancel(id, queue).catch(() => undefined);
    for (const id of await this.d.store.requestCancel(b.id)) await promoteIfDelayed(this.d.queue, id);
  }
}
