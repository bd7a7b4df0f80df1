"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MediaExecutor = void 0;
exports.inputFor = inputFor;
const bullmq_1 = require("bullmq");
const catalog_index_1 = require("../../shared/catalog/catalog-index");
const money_1 = require("../../shared/billing/money");
const app_error_1 = require("../../shared/errors/app-error");
const media_mapper_1 = require("../../shared/formats/media.mapper");
const registry_1 = require("../../shared/providers/registry");
const upstream_error_1 = require("../../shared/providers/upstream-error");
const plan_route_1 = require("../../shared/routing/plan-route");
const metrics_1 = require("../../shared/metrics/metrics");
const generation_bus_1 = require("../../shared/queue/generation-bus");
const queue_names_1 = require("../../shared/queue/queue-names");
const callbacks_service_1 = require("../../shared/services/callbacks.service");
const attempt_loop_1 = require("./attempt-loop");
const image_executor_1 = require("./image-executor");
const output_store_1 = require("./output-store");
/**
 * Runs image and media generations (queues `image` and `media`) as STEP jobs (BullMQ's documented pattern):
 *
 *   start   → markProcessing; try each planned endpoint: an `images` operation answers at once (OpenAI), a
 *             `media` operation creates an upstream task (Replicate) whose id is saved with job.updateData
 *   polling → the job re-schedules itself with job.moveToDelayed + DelayedError (growing back-off): no worker
 *             sleeps; each run reads the task once
 *   done    → outputs downloaded into our storage (each saved file recorded in the step, so a retry does not
 *             store it twice), the money settled once, the waiting API told, the callback queued
 *
 * A retry after a crash resumes at the saved step, polling the same task instead of creating a second one.
 * A generation cancelled meanwhile is seen at the next step: the upstream task is cancelled and the job ends.
 */
class MediaExecutor {
    deps;
    opts;
    images;
    store;
    callbacks;
    /** The callbacks queue this executor opened itself (none given): closed by close(). */
    ownQueue;
    /** `callbacks`: where finished generations with a `callBackUrl` are queued (the worker pool's, closed with it). */
    constructor(deps, opts, callbacks) {
        this.deps = deps;
        this.opts = opts;
        this.store = new output_store_1.OutputStore(deps, { fetch: opts.fetch ?? globalThis.fetch, downloadTimeoutMs: opts.downloadTimeoutMs });
        this.images = new image_executor_1.ImageExecutor(deps, this.store);
        if (!callbacks)
            this.ownQueue = new bullmq_1.Queue(queue_names_1.QUEUES.callbacks, { connection: deps.redis, prefix: deps.config.queuePrefix });
        this.callbacks = callbacks ?? new callbacks_service_1.CallbackService(this.ownQueue, { backoffMs: opts.callbackBackoffMs });
    }
    async close() {
        await this.ownQueue?.close();
    }
    async run(job, token) {
        try {
            await this.step(job, token);
        }
        catch (e) {
            if (e instanceof bullmq_1.DelayedError)
                throw e;
            // A call aborted because the generation was cancelled (or any failure after a cancel): the cancel stands.
            if (await this.endIfCancelled(job.data).catch(() => false))
                return;
            // The last attempt ends the generation (free), so no reservation is left held by a dead job.
            const last = e instanceof bullmq_1.UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
            this.deps.logger.warn('media job step failed', { generationId: job.data.generationId, err: e, last, trace_id: job.data.traceId });
            if (last) {
                const err = new app_error_1.AppError('INTERNAL_ERROR', 'The generation could not be completed');
                await this.fail(job.data, err, job.data.step?.attempts ?? []).catch(() => undefined);
            }
            throw e;
        }
    }
    async step(job, token) {
        const data = job.data;
        const gen = await this.deps.db.generation.findUnique({ where: { id: data.generationId }, select: { status: true } });
        if (!gen)
            return;
        if (gen.status === 'completed' || gen.status === 'failed' || gen.status === 'cancelled') {
            // A run that stored files and died before settling: the outcome decides what stays (cancelled: nothing).
            if (gen.status === 'cancelled' && data.step)
                await this.cancelUpstream(data, data.step);
            await this.discardUnkept(data);
            if (gen.status === 'cancelled')
                await this.publisher(data).send({ type: 'cancelled' });
            return;
        }
        if (data.step)
            return this.poll(job, token, data.step);
        await this.deps.generations.markProcessing(data.generationId, Math.max(0, (job.processedOn ?? Date.now()) - job.timestamp));
        return this.start(job, token);
    }
    /**
     * Runs the attempt loop (attempt-loop.ts): an endpoint with a `media` operation creates an upstream task (then
     * polled), one with an `images` operation answers at once. Failures other than the provider's (a download, the
     * database) are the job's own: they are thrown, and BullMQ retries the job.
     */
    async start(job, token) {
        const data = job.data;
        const out = await (0, attempt_loop_1.runAttempts)(this.deps, data, {
            operation: data.kind,
            call: async (c) => c.adapter.media
                ? { task: await this.createTask(data, c) }
                : { images: await this.whileNotCancelled(data, (signal) => this.images.generate(data, c, signal)) },
            passThrough: (e) => !(0, upstream_error_1.isUpstreamError)(e) || e.aborted,
            // A task is judged when it finishes (complete / failTask), not when it is created.
            onAnswer: false,
        });
        if (out.kind !== 'answered')
            return this.fail(data, (0, attempt_loop_1.failureError)(this.deps, out.attempts, out.kind === 'failed' ? out.last : undefined), out.attempts);
        const { candidate, resolved } = out.call;
        const attempts = out.attempts;
        if ('images' in out.value)
            return this.complete(data, { candidate, resolved, outputs: out.value.images.outputs, tokens: out.value.images.tokens, attempts });
        const { task } = out.value;
        const step = { phase: 'polling', candidate: data.candidates.indexOf(candidate), taskId: task.id, polls: 0, pollErrors: 0, createdAt: Date.now(), attempts, saved: [] };
        await job.updateData({ ...data, step });
        return this.onTask(job, token, step, task);
    }
    async createTask(data, c) {
        const media = c.adapter.media;
        const spec = media.buildCreate({ model: c.resolved.endpoint.upstreamModel, input: inputFor(data, c.candidate) }, c.resolved.provider.apiKey ?? '');
        const reply = await (0, attempt_loop_1.upstreamRequest)(this.deps, c, spec);
        return media.parseTask(reply.json);
    }
    /** One upstream exchange about a running task, within the provider's concurrency cap. */
    call(resolved, adapter, spec) {
        return (0, attempt_loop_1.upstreamRequest)(this.deps, { resolved, adapter }, spec);
    }
    async poll(job, token, step) {
        const data = job.data;
        const candidate = data.candidates[step.candidate];
        const resolved = candidate && (0, catalog_index_1.endpointBySlug)(this.deps.catalog, candidate.slug);
        const adapter = resolved && (0, registry_1.adapterFor)(resolved.provider.kind);
        if (!candidate || !resolved || !adapter?.media) {
            return this.fail(data, app_error_1.AppError.fromReason('provider_error', 'The endpoint running this generation is no longer in the catalog'), step.attempts);
        }
        let task;
        try {
            const reply = await this.call(resolved, adapter, adapter.media.buildGet(step.taskId, resolved.provider.apiKey ?? ''));
            task = adapter.media.parseTask(reply.json);
        }
        catch (e) {
            if (!(0, upstream_error_1.isUpstreamError)(e))
                throw e;
            const pollErrors = step.pollErrors + 1;
            if (pollErrors > this.opts.maxPollErrors)
                return this.failTask(data, step, e.failure);
            return this.schedule(job, token, { ...step, pollErrors, polls: step.polls + 1 });
        }
        return this.onTask(job, token, { ...step, pollErrors: 0 }, task);
    }
    async onTask(job, token, step, task) {
        const data = job.data;
        switch (task.status) {
            case 'pending':
            case 'processing':
                if (Date.now() - step.createdAt > this.opts.taskTimeoutMs) {
                    await this.cancelUpstream(data, step);
                    return this.failTask(data, step, { reason: 'upstream_timeout', message: `The provider did not finish within ${Math.round(this.opts.taskTimeoutMs / 1000)} s` });
                }
                return this.schedule(job, token, { ...step, polls: step.polls + 1 });
            case 'succeeded':
                return this.completeTask(job, step, task);
            case 'failed':
                return this.failTask(data, step, { reason: 'provider_error', message: `The provider failed the generation: ${task.error ?? 'no reason given'}`, raw: task.error });
            case 'cancelled':
                return this.endCancelled(data);
        }
    }
    /** Saves the step and runs the job again after the back-off (the worker is free meanwhile). */
    async schedule(job, token, step) {
        // Cancelled while this run polled: cancel the upstream task now rather than after the next back-off.
        if (await this.endIfCancelled({ ...job.data, step }))
            return;
        const delay = Math.min(this.opts.pollMs * 1.5 ** Math.max(0, step.polls - 1), this.opts.maxPollMs);
        await job.updateData({ ...job.data, step });
        await job.moveToDelayed(Date.now() + Math.round(delay), token);
        throw new bullmq_1.DelayedError();
    }
    async completeTask(job, step, task) {
        const data = job.data;
        const candidate = data.candidates[step.candidate];
        const resolved = (0, catalog_index_1.endpointBySlug)(this.deps.catalog, candidate.slug);
        if (task.outputs.length === 0)
            return this.failTask(data, step, { reason: 'malformed_reply', message: 'The provider finished without an output file', raw: task.text });
        const saved = [...step.saved];
        await this.whileNotCancelled(data, async (signal) => {
            for (const url of task.outputs) {
                if (saved.some((s) => s.source === url))
                    continue;
                saved.push({ source: url, ...(await this.store.download(data, url, data.kind, signal)) });
                await job.updateData({ ...data, step: { ...step, saved } });
            }
        });
        const timed = data.kind === 'video' || data.kind === 'audio' || (data.kind === 'upscale' && !data.sourceIsImage);
        // duration_seconds: from the provider's output, else from the request, else from the file (interface.md).
        const seconds = timed ? (task.metrics.durationSeconds ?? data.expectedSeconds ?? saved.find((s) => s.durationSeconds !== undefined)?.durationSeconds) : undefined;
        if (timed && seconds === undefined)
            this.deps.logger.warn('no duration for a timed media output', { generationId: data.generationId, trace_id: data.traceId });
        const outputs = saved.map((s) => ({ url: s.url, fileId: s.fileId, mimeType: s.mimeType, ...(seconds !== undefined && { durationSeconds: seconds }) }));
        const tokens = task.metrics.inputTokens !== undefined || task.metrics.outputTokens !== undefined ? { input: task.metrics.inputTokens ?? 0, output: task.metrics.outputTokens ?? 0 } : undefined;
        return this.complete(data, { candidate, resolved, outputs, attempts: step.attempts, seconds, tokens, taskId: task.id, content: task.text });
    }
    /** Settles the money once and records the result; tells the waiting API; queues the callback. */
    async complete(data, c) {
        const prompt = typeof data.input.prompt === 'string' ? data.input.prompt : data.image?.request.prompt;
        const units = (0, media_mapper_1.producedUnits)(data.kind, c.outputs, { seconds: c.seconds, prompt, sourceIsImage: data.sourceIsImage });
        // usage × price, within the reservation (an upper bound: the endpoint's longest output). A provider that
        // still went beyond it is charged the bound; the rest is recorded for operators, never taken silently.
        const priced = (0, media_mapper_1.mediaCost)(c.resolved.endpoint.price, units);
        const reserved = await this.reservedAmount(data.generationId);
        const overrun = reserved !== undefined && priced.greaterThan(reserved) ? priced.minus(reserved) : undefined;
        const cost = overrun ? reserved : priced;
        const usage = { input_units: data.inputUnits, output_units: c.outputs.length };
        if (c.seconds !== undefined)
            usage.duration_seconds = c.seconds;
        if (c.tokens)
            Object.assign(usage, { input_tokens: c.tokens.input, output_tokens: c.tokens.output, total_tokens: c.tokens.input + c.tokens.output });
        const result = {
            data: (0, media_mapper_1.mediaData)(c.outputs),
            outputs: c.outputs,
            provider: c.resolved.provider.id,
            endpoint: c.candidate.slug,
            ...(c.taskId !== undefined && { taskId: c.taskId }),
            ...(c.content !== undefined && { content: c.content }),
        };
        const warnings = [...data.warnings, ...(0, plan_route_1.ignoredParameterWarnings)(c.candidate.dropParams, c.candidate.model, c.resolved.provider.id)];
        const outcome = await this.deps.generations.finish(data.generationId, {
            status: 'completed',
            cost,
            result,
            usage,
            warnings,
            model: c.candidate.model,
            provider: c.resolved.provider.id,
            finalEndpointSlug: c.candidate.slug,
            finishReason: 'stop',
            attemptsCount: c.attempts.length + 1,
            generationTimeMs: await this.elapsed(data.generationId),
            upstreamId: c.taskId ?? null,
            routing: {
                attempts: c.attempts,
                answeredBy: c.candidate.slug,
                ...(overrun && {
                    overrun: {
                        uncharged_rub: (0, money_1.moneyString)(overrun),
                        priced_rub: (0, money_1.moneyString)(priced),
                        charged_rub: (0, money_1.moneyString)(cost),
                        ...(c.seconds !== undefined && { duration_seconds: c.seconds }),
                        ...(c.resolved.endpoint.maxDurationSeconds !== undefined && { max_duration_seconds: c.resolved.endpoint.maxDurationSeconds }),
                    },
                }),
            },
        });
        if (overrun && outcome.applied) {
            this.deps.metrics.mediaUncharged.inc({ provider: c.resolved.provider.id }, (0, metrics_1.rub)(overrun));
            this.deps.logger.warn('media output beyond the reserved bound: charged the bound', {
                generationId: data.generationId,
                endpoint: c.candidate.slug,
                seconds: c.seconds,
                uncharged_rub: (0, money_1.moneyString)(overrun),
                trace_id: data.traceId,
            });
        }
        this.deps.stats.record(c.candidate.slug, { ok: true, at: Date.now() });
        this.deps.metrics.providerAttempts.inc({ provider: c.resolved.provider.id, outcome: 'ok' });
        // Storing and settling are one decision: a generation cancelled while its output was being stored ends
        // cancelled and free, and the files this run stored go (the cancel route removes those it found).
        if (!outcome.applied)
            await this.discardUnkept(data);
        await this.publisher(data).send(outcome.applied ? { type: 'done', payload: { id: data.generationId } } : { type: 'cancelled' });
        if (outcome.applied)
            await this.callback(data, 'completed');
    }
    failTask(data, step, f) {
        const candidate = data.candidates[step.candidate];
        const provider = (0, catalog_index_1.endpointBySlug)(this.deps.catalog, candidate.slug)?.provider.id ?? candidate.slug;
        const attempts = [...step.attempts, (0, attempt_loop_1.attemptOf)(provider, candidate.slug, f)];
        (0, attempt_loop_1.failedAttempt)(this.deps, candidate.slug, provider, f);
        const reason = f.reason === 'upstream_timeout' ? 'upstream_timeout' : 'provider_error';
        const err = app_error_1.AppError.fromReason(reason, f.message, { raw: f.raw ?? f.message, provider_name: provider, attempts });
        return this.fail(data, err, attempts);
    }
    /** Ends the generation as failed (nothing charged). */
    async fail(data, err, attempts) {
        const error = err.toStored();
        const outcome = await this.deps.generations.finish(data.generationId, { status: 'failed', error, routing: { attempts }, attemptsCount: attempts.length, generationTimeMs: await this.elapsed(data.generationId) });
        await this.discardUnkept(data);
        await this.publisher(data).send(outcome.applied ? { type: 'failed', error } : { type: 'cancelled' });
        if (outcome.applied)
            await this.callback(data, 'failed');
    }
    /** The provider cancelled the task on its side. */
    async endCancelled(data) {
        const outcome = await this.deps.generations.finish(data.generationId, { status: 'cancelled' });
        await this.discardUnkept(data);
        await this.publisher(data).send({ type: 'cancelled' });
        if (outcome.applied)
            await this.callback(data, 'cancelled');
    }
    /**
     * Runs a long upstream exchange with a signal that aborts once the generation is cancelled (looked up every
     * `cancelCheckMs`), so nobody waits for, or downloads, work nobody will receive.
     */
    async whileNotCancelled(data, fn) {
        const ctl = new AbortController();
        let checking = false;
        const timer = setInterval(() => {
            if (checking)
                return;
            checking = true;
            this.deps.db.generation
                .findUnique({ where: { id: data.generationId }, select: { status: true } })
                .then((g) => {
                if (g?.status === 'cancelled')
                    ctl.abort(new Error('the generation was cancelled'));
            })
                .catch(() => undefined)
                .finally(() => {
                checking = false;
            });
        }, this.opts.cancelCheckMs);
        try {
            return await fn(ctl.signal);
        }
        finally {
            clearInterval(timer);
        }
    }
    /** When the generation has been cancelled: cancels the upstream task, removes stored output, tells the API; true. */
    async endIfCancelled(data) {
        const g = await this.deps.db.generation.findUnique({ where: { id: data.generationId }, select: { status: true } });
        if (g?.status !== 'cancelled')
            return false;
        if (data.step)
            await this.cancelUpstream(data, data.step);
        await this.discardUnkept(data);
        await this.publisher(data).send({ type: 'cancelled' });
        return true;
    }
    /** Best effort: a task that cannot be cancelled upstream still costs the caller nothing. */
    async cancelUpstream(data, step) {
        const candidate = data.candidates[step.candidate];
        const resolved = candidate && (0, catalog_index_1.endpointBySlug)(this.deps.catalog, candidate.slug);
        const adapter = resolved && (0, registry_1.adapterFor)(resolved.provider.kind);
        if (!resolved || !adapter?.media)
            return;
        try {
            await this.call(resolved, adapter, adapter.media.buildCancel(step.taskId, resolved.provider.apiKey ?? ''));
        }
        catch (e) {
            this.deps.logger.warn('upstream cancel failed', { generationId: data.generationId, taskId: step.taskId, err: e });
        }
    }
    /** Removes the stored files the generation's outcome does not keep (all of them unless it completed). */
    async discardUnkept(data) {
        const n = await this.deps.files.discardUnkept(data.generationId);
        if (n > 0)
            this.deps.logger.info('discarded the output of a generation that did not complete', { generationId: data.generationId, files: n, trace_id: data.traceId });
    }
    async callback(data, status) {
        if (!data.callBackUrl)
            return;
        await this.callbacks.enqueue({ generationId: data.generationId, organizationId: data.organizationId, url: data.callBackUrl, status });
    }
    /** What the generation reserved (its cost's upper bound); undefined for a record without one. */
    async reservedAmount(id) {
        const g = await this.deps.db.generation.findUnique({ where: { id }, select: { reservedAmount: true } });
        return g ? (0, money_1.money)(g.reservedAmount.toString()) : undefined;
    }
    async elapsed(id) {
        const g = await this.deps.db.generation.findUnique({ where: { id }, select: { startedAt: true } });
        return g?.startedAt ? Math.max(0, this.deps.clock().getTime() - g.startedAt.getTime()) : null;
    }
    publisher(data) {
        return new generation_bus_1.GenerationPublisher(this.deps.redis, data.replyTo, data.generationId);
    }
}
exports.MediaExecutor = MediaExecutor;
/** The media input sent to one endpoint: without the fields it does not support (dropped with a warning). */
function inputFor(data, candidate) {
    const base = data.image ? (0, media_mapper_1.imageRequestToMediaInput)(data.image.request) : data.input;
    const drop = new Set([...candidate.dropParams, 'callBackUrl']);
    return Object.fromEntries(Object.entries(base).filter(([k, v]) => !drop.has(k) && v !== undefined));
}
