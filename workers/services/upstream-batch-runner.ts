import { DelayedError, type Job, type Queue } from 'bullmq';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import { adapterByKind } from '../../shared/providers/registry';
import type { BatchApiOperation, BatchMatch, ListedBatch, UpstreamBatch as ProviderBatch, UpstreamBatchResult } from '../../shared/providers/adapter.types';
import type { HttpRequestSpec } from '../../shared/providers/provider.types';
import type { UpstreamReply } from '../../shared/providers/api';
import type { UpstreamBatchJobData } from '../../shared/queue/job-catalog';
import { promoteIfDelayed } from '../../shared/queue/promote';
import { RUNNING_STATUSES } from '../../shared/services/generation.service';
import type { UpstreamBatch, UpstreamBatches } from '../../shared/services/upstream-batches.service';
import type { WorkerDeps } from '../worker-deps';
import { endGeneration } from '../../shared/billing/ending';
import { failLine, failureOf, fallBack, settleLine, upstreamLine, type ChunkCall, type ParkedJob } from './upstream-batch-lines';

/** Result lines settled at once. */
const SETTLE_PARALLEL = 32;

/** Consecutive polls that fail (the provider or the network away) before the chunk's lines fall back. */
const MAX_POLL_ERRORS = 10;

/** How far back a re-run looks for the upstream batch an earlier run may have created: list pages, and clock skew. */
const FIND_PAGES = 10;
const FIND_SKEW_MS = 60_000;

/** Our batch's states in which its lines no longer run: a line the provider did not finish is cancelled, not retried. */
const STOPPED = new Set(['cancelling', 'cancelled', 'expired', 'failed']);

/**
 * The job of one chunk of parked batch lines at its endpoint's provider batch API (queue `upstream_batches`; docs/batches.md
 * "Provider batch APIs"). A step job, as media jobs are (media-executor.ts); its state is its `upstream_batches` row:
 *
 *   new        → `submitting` committed (the intent, before anything goes upstream), the lines' requests built from
 *                their ordinary jobs (stream off), uploaded (OpenAI) and the batch created, tagged with the chunk's id;
 *                its upstream id committed with `running`. A run that finds `submitting` (an earlier run died between
 *                the create and its commit) first looks for that batch in the provider's list (`find`: by the chunk's
 *                tag on OpenAI, by its shape on Anthropic) and takes it; it creates one only when none is found, or when
 *                the batches that fit cannot be told apart (each line is still charged once).
 *   running    → polled (`moveToDelayed` + DelayedError, every BATCH_UPSTREAM_POLL_MS); a cancel asked for by our batch
 *                (cancel or expiry) is sent once. Ended: its results read line by line, each line settled at the batch
 *                price, failed (a 4xx: nothing charged) or fallen back to its ordinary job (5xx, 429, left out, the
 *                batch failed or expired; cancelled instead when our batch stopped). Then `done`.
 *
 * Every ending is the ledger's idempotent close: a re-run (a crash, the job run twice) re-reads and re-settles
 * without charging anything twice, and never creates a second upstream batch for a chunk recorded `running`.
 */
export class UpstreamBatchRunner {
  constructor(
    private readonly deps: WorkerDeps,
    private readonly store: UpstreamBatches,
    /** The lines' ordinary queues (a fallback's job goes there) and `batches` (the drivers' jobs, woken when a chunk ends). */
    private readonly queues: Record<'text' | 'embeddings' | 'batches', Queue>,
  ) {}

  async run(job: Job<UpstreamBatchJobData & { pollErrors?: number }>, token?: string): Promise<void> {
    let u = await this.store.get(job.data.upstreamBatchId);
    if (!u || u.status === 'done') return;
    const resolved = endpointBySlug(this.deps.catalog, u.endpointSlug);
    const adapter = resolved && adapterByKind[resolved.provider.kind];
    const lines = await this.store.lines(u.id);
    if (!resolved || !adapter?.batch) {
      // The catalog changed since the lines were parked: they run on the ordinary path.
      await this.endAll(u, lines, 'the endpoint no longer takes batches');
      return;
    }
    const call: ChunkCall = { resolved, adapter, submittedAt: (u.submittedAt ?? u.createdAt).getTime() };
    const op = adapter.batch;
    if (u.status === 'new' || u.status === 'submitting') {
      const submitted = await this.submit(u, op, call, lines);
      if (!submitted) return;
      u = submitted;
      call.submittedAt = (u.submittedAt ?? new Date()).getTime();
    }
    const key = resolved.provider.apiKey ?? '';
    let batch: ProviderBatch;
    try {
      if (!u.cancelSent && (u.cancelRequested || (await this.stopped(u)))) {
        // Our batch was cancelled or expired: the provider stops what it has not run (what it ran is still charged).
        batch = op.parseBatch((await this.request(call, op.buildCancel(u.upstreamId!, key))).json, key);
        await this.store.note(u.id, { cancelSent: true });
      } else batch = op.parseBatch((await this.request(call, op.buildGet(u.upstreamId!, key))).json, key);
    } catch (err) {
      const errors = (job.data.pollErrors ?? 0) + 1;
      this.deps.logger.warn('a provider batch poll failed', { upstreamBatchId: u.id, errors, err, trace_id: job.data.traceId });
      if (errors < MAX_POLL_ERRORS) return this.later(job, token, errors);
      batch = { id: u.upstreamId!, status: 'failed', results: [], error: `${errors} polls failed in a row` };
    }
    if (batch.status === 'running') {
      await this.store.note(u.id, { polls: u.polls + 1 });
      return this.later(job, token, 0);
    }
    const seen = new Set<string>();
    if (batch.status === 'ended') for (const spec of batch.results) await this.readResults(u, call, op, spec, lines, seen);
    // A result for a line not in this chunk: the batch taken on a re-run (found by its shape) was another's. Such
    // results were applied to nothing; this chunk's lines, without results, fall back below.
    const ours = new Set(lines.map((l) => l.generationId));
    const foreign = [...seen].filter((id) => !ours.has(id));
    if (foreign.length) this.deps.logger.warn('a provider batch holds results of lines not in its chunk: it was another\'s, none applied', { upstreamBatchId: u.id, upstreamId: u.upstreamId, foreign: foreign.length, sample: foreign.slice(0, 5) });
    // Lines without a result (the batch failed, expired or left them out) run on the ordinary path, or stop with our batch.
    await this.endAll(u, lines.filter((l) => !seen.has(l.generationId)), batch.status === 'failed' ? `the provider batch failed: ${batch.error ?? 'no reason given'}` : foreign.length ? 'the provider batch was another\'s' : 'no result for the line');
  }

  /** Creates the chunk's upstream batch (its lines still running): the row `running`, or null when nothing went upstream. */
  private async submit(u: UpstreamBatch, op: BatchApiOperation, call: ChunkCall, lines: ParkedJob[]): Promise<UpstreamBatch | null> {
    if (u.cancelRequested || (await this.stopped(u))) {
      await this.endAll(u, lines, 'its batch stopped before the lines went upstream');
      return null;
    }
    const resumed = u.status === 'submitting';
    if (!resumed && !(await this.store.move(u.id, 'new', 'submitting'))) return null;
    const live = await this.running(lines);
    if (!live.length) {
      await this.store.move(u.id, 'submitting', 'done');
      return null;
    }
    const key = call.resolved.provider.apiKey ?? '';
    // A failed look is thrown: the job is tried again (its back-off), the row still `submitting`.
    const found = resumed ? await this.find(u, op, call, { minLines: live.length, maxLines: lines.length }) : null;
    try {
      const upstream = live.map((l) => upstreamLine(l, call));
      let fileId = u.upstreamFileId ?? undefined;
      if (!found && !fileId && op.buildUpload && op.parseUpload) {
        fileId = op.parseUpload((await this.request(call, op.buildUpload(upstream, key))).json);
        await this.store.note(u.id, { upstreamFileId: fileId });
      }
      const created = found ?? op.parseBatch((await this.request(call, op.buildCreate({ lines: upstream, fileId, tag: u.id }, key))).json, key);
      if (!(await this.store.move(u.id, 'submitting', 'running', { upstreamId: created.id }))) return null;
      this.deps.logger.info('batch lines sent to their provider batch API', { upstreamBatchId: u.id, upstreamId: created.id, lines: live.length, endpoint: u.endpointSlug });
      return { ...u, status: 'running', upstreamId: created.id, submittedAt: new Date() };
    } catch (err) {
      // Refused (a 4xx, the provider away): the lines run on the ordinary path rather than wait for a batch.
      this.deps.logger.warn('a provider batch was not created: its lines fall back', { upstreamBatchId: u.id, err });
      await this.store.note(u.id, { error: (err as Error).message?.slice(0, 1000) ?? String(err) });
      await this.endAll({ ...u, status: 'submitting' }, live, 'the provider batch was not created');
      return null;
    }
  }

  /**
   * The provider batch an earlier run of this chunk created and never recorded: the provider's list, newest first, back
   * to a little before the chunk went `submitting`, matched by the adapter (`find.match`: tag or shape) against what
   * the run knows. What chunks recorded and which are `submitting` is read after each page: a batch listed was created
   * before, so a chunk that made it has recorded it or is still `submitting` by then.
   */
  private async find(u: UpstreamBatch, op: BatchApiOperation, call: ChunkCall, size: { minLines: number; maxLines: number }): Promise<ProviderBatch | null> {
    if (!op.find) return null;
    const key = call.resolved.provider.apiKey ?? '';
    const sinceMs = (u.submittedAt ?? u.createdAt).getTime() - FIND_SKEW_MS;
    const untilMs = this.deps.clock().getTime() + FIND_SKEW_MS;
    const listed: ListedBatch[] = [];
    let after: string | undefined;
    let match: BatchMatch = { candidates: [] };
    for (let page = 0; page < FIND_PAGES; page++) {
      const { batches, next } = op.find.parse((await this.request(call, op.find.build(after, key))).json);
      listed.push(...batches);
      const oldest = Math.min(...batches.map((b) => b.createdMs ?? Infinity));
      const complete = !next || oldest < sinceMs;
      const [known, others] = await Promise.all([this.store.recorded(listed.map((b) => b.id)), this.store.submitting(u.id)]);
      const sought = { tag: u.id, sinceMs, untilMs, ...size, known, complete, others: others.map((o) => ({ sinceMs: o.since.getTime() - FIND_SKEW_MS, maxLines: o.lines })) };
      match = op.find.match(listed, sought);
      if (match.batch) {
        this.deps.logger.info('a chunk resumed: its provider batch was created by an earlier run', { upstreamBatchId: u.id, upstreamId: match.batch.id });
        return op.parseBatch(match.batch.raw, key);
      }
      if (complete) break;
      after = next;
    }
    if (match.candidates.length) {
      // Rare: the batches that fit cannot be told apart. A second batch costs us its run; taking another's would send these lines to their ordinary jobs.
      this.deps.logger.warn('a chunk resumed: provider batches that could be its own cannot be told apart, a new one is created', { upstreamBatchId: u.id, candidates: match.candidates });
    }
    return null;
  }

  /** Reads one results reply line by line: each line's result settles, fails or falls back its generation. */
  private async readResults(u: UpstreamBatch, call: ChunkCall, op: BatchApiOperation, spec: HttpRequestSpec, lines: ParkedJob[], seen: Set<string>): Promise<void> {
    const live = new Map((await this.running(lines)).map((l) => [l.generationId, l]));
    const text = (await this.request(call, spec)).text;
    const stopped = await this.stopped(u);
    const results: Array<{ l: ParkedJob; r: UpstreamBatchResult }> = [];
    for (let start = 0; start < text.length; ) {
      const end = text.indexOf('\n', start);
      const raw = text.slice(start, end < 0 ? text.length : end).trim();
      start = end < 0 ? text.length : end + 1;
      if (!raw) continue;
      const r = op.parseResultLine(raw);
      if (seen.has(r.customId)) continue;
      seen.add(r.customId);
      // An ended line (settled by an earlier run) is left as it is.
      const l = live.get(r.customId);
      if (l) results.push({ l, r });
    }
    // Settled SETTLE_PARALLEL at a time: each close joins the ledger's group commits.
    for (let i = 0; i < results.length; i += SETTLE_PARALLEL) {
      await Promise.all(
        results.slice(i, i + SETTLE_PARALLEL).map(async ({ l, r }) => {
          const failure = r.ok ? await settleLine(this.deps, l, call, r.body) : failureOf(r);
          if (!failure) return;
          if (!failure.fallback) await failLine(this.deps, l, call, failure);
          else if (stopped) await this.cancel(l);
          else await fallBack(this.deps, this.queues, l, failure.message);
        }),
      );
    }
  }

  /**
   * Ends the chunk: its lines still running fall back to their ordinary jobs, or are cancelled when our batch stopped.
   * Every way a chunk ends its lines comes here last; then the batch's driver is woken to answer them.
   */
  private async endAll(u: UpstreamBatch, lines: ParkedJob[], why: string): Promise<void> {
    const stopped = u.cancelRequested || (await this.stopped(u));
    for (const l of await this.running(lines)) {
      if (stopped) await this.cancel(l);
      else await fallBack(this.deps, this.queues, l, why);
    }
    await this.store.move(u.id, u.status as 'new' | 'submitting' | 'running', 'done');
    await this.wake(u.batchId);
  }

  /**
   * Promotes the batch's driver job (its id is the batch's) if it waits in the delayed set: while every line of a batch
   * is at a provider, its driver waits up to BATCH_UPSTREAM_POLL_MS between steps (BatchUpstream.idle). A run of it that
   * is active keeps its own loop, whose waits are short.
   */
  private wake(batchId: string): Promise<void> {
    return promoteIfDelayed(this.queues.batches, batchId);
  }

  /** A line that never ran: cancelled, its reservation released, nothing charged. */
  private async cancel(l: ParkedJob): Promise<void> {
    await endGeneration(this.deps, null, { generationId: l.generationId, organizationId: (l.job as { organizationId: string }).organizationId }, { kind: 'end', finish: { status: 'cancelled' } });
  }

  /** The lines whose generations have not ended. */
  private async running(lines: ParkedJob[]): Promise<ParkedJob[]> {
    if (!lines.length) return [];
    const rows = await this.deps.db.generation.findMany({ where: { id: { in: lines.map((l) => l.generationId) }, status: { in: [...RUNNING_STATUSES] } }, select: { id: true } });
    const live = new Set(rows.map((r) => r.id));
    return lines.filter((l) => live.has(l.generationId));
  }

  /** Whether our batch stopped (cancelled or past its window): lines the provider did not finish are not retried. */
  private async stopped(u: UpstreamBatch): Promise<boolean> {
    const b = await this.deps.db.batch.findUnique({ where: { id: u.batchId }, select: { status: true, expiresAt: true } });
    return !b || STOPPED.has(b.status) || this.deps.clock() >= b.expiresAt;
  }

  private request(call: ChunkCall, spec: HttpRequestSpec): Promise<UpstreamReply> {
    const { provider } = call.resolved;
    return this.deps.upstream.request(provider.baseUrl, spec, { timeoutMs: provider.timeoutMs, extractError: call.adapter.extractError });
  }

  /** The next poll (sooner while a cancel is on its way), or after a failed poll with the count of failures so far. */
  private async later(job: Job<UpstreamBatchJobData & { pollErrors?: number }>, token: string | undefined, pollErrors: number): Promise<never> {
    if ((job.data.pollErrors ?? 0) !== pollErrors) await job.updateData({ ...job.data, pollErrors });
    await job.moveToDelayed(Date.now() + this.deps.config.batches.upstreamPollMs, token);
    throw new DelayedError();
  }
}
