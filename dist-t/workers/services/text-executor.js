"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.TextExecutor = void 0;
const app_error_1 = require("../../shared/errors/app-error");
const upstream_error_1 = require("../../shared/providers/upstream-error");
const provider_types_1 = require("../../shared/providers/provider.types");
const pricing_1 = require("../../shared/billing/pricing");
const format_utils_1 = require("../../shared/formats/format-utils");
const plan_route_1 = require("../../shared/routing/plan-route");
const generation_bus_1 = require("../../shared/queue/generation-bus");
const stream_accumulator_1 = require("./stream-accumulator");
const unstored_text_1 = require("../../shared/formats/unstored-text");
const masker_1 = require("../../shared/plugins/masker");
const cancel_channel_1 = require("../../shared/queue/cancel-channel");
const attempt_loop_1 = require("./attempt-loop");
/** A stream that broke (or was stopped) after content reached the client: what it produced is billed. */
class MidStreamFailure extends Error {
    failure;
    partial;
    candidate;
    resolved;
    maxOutputTokens;
    constructor(failure, partial, candidate, resolved, 
    /** Output billed at most (a runaway stream cut by us). */
    maxOutputTokens) {
        super(failure.message);
        this.failure = failure;
        this.partial = partial;
        this.candidate = candidate;
        this.resolved = resolved;
        this.maxOutputTokens = maxOutputTokens;
    }
    get providerId() {
        return this.resolved.provider.id;
    }
}
/**
 * Runs a text job through the attempt loop (attempt-loop.ts: fallback on 5xx, 429, timeouts and malformed
 * replies), streams deltas to the waiting API process, then settles the money and the record once.
 */
class TextExecutor {
    deps;
    constructor(deps) {
        this.deps = deps;
    }
    /** `signal` aborts the upstream call (cancel, timeout, client gone: shared/queue/cancel-channel.ts). */
    async run(data, timing, signal) {
        const pub = new generation_bus_1.GenerationPublisher(this.deps.redis, data.replyTo, data.generationId);
        const run = { queueTimeMs: Math.max(0, timing.startedAt - timing.enqueuedAt), startedAt: timing.startedAt };
        if (data.mode === 'async')
            await this.deps.generations.markProcessing(data.generationId, run.queueTimeMs);
        const masker = data.plugins?.includes('masker') ? new MaskedRun(data) : undefined;
        if (masker)
            data = masker.data;
        const job = data;
        const attempts = [];
        let out;
        try {
            out = await (0, attempt_loop_1.runAttempts)(this.deps, data, {
                operation: 'text',
                call: (c) => this.attempt(job, c, pub, masker),
                signal,
                passThrough: (e) => e instanceof MidStreamFailure,
                attempts,
                onAnswer: ({ result, firstTokenAt }, started, finished) => ({
                    ttftMs: firstTokenAt - started,
                    tokensPerSecond: finished > firstTokenAt ? (result.usage.outputTokens * 1000) / (finished - firstTokenAt) : undefined,
                }),
            });
        }
        catch (e) {
            if (e instanceof MidStreamFailure)
                return this.failMidStream(data, e, attempts, pub, run);
            throw e;
        }
        if (out.kind === 'stopped')
            return this.stopped(data, out.cause instanceof MidStreamFailure ? out.cause : undefined, attempts, pub, signal, run);
        if (out.kind === 'failed')
            return (0, attempt_loop_1.endFailed)(this.deps, pub, data.generationId, (0, attempt_loop_1.failureError)(this.deps, attempts, out.last), attempts, run);
        const { result, firstTokenAt } = out.value;
        const { candidate, resolved } = out.call;
        if (masker && !data.request.stream)
            masker.unmaskResult(result);
        const cost = (0, pricing_1.tokenCost)(resolved.endpoint.price, result.usage);
        const warnings = [...data.warnings, ...(0, plan_route_1.ignoredParameterWarnings)(candidate.dropParams, candidate.model, resolved.provider.id)];
        const payload = {
            result,
            model: candidate.model,
            endpoint: candidate.slug,
            provider: resolved.provider.id,
            cost: cost.toFixed(10),
            warnings,
            attempts,
            plugins: masker?.usage(),
        };
        {const __m=(globalThis.__T??=(()=>{const m=new Map();const agg={};let n=0;process.on('SIGUSR2',()=>{});setInterval(()=>{},1e9).unref();globalThis.__dump=()=>{};globalThis.__fin=(id)=>{const t=m.get(id);if(!t)return;m.delete(id);n++;const ks=Object.keys(t);for(let i=1;i<ks.length;i++){const k=ks[i-1]+'>'+ks[i];(agg[k]??=[]).push(t[ks[i]]-t[ks[i-1]]);}if(n%100===0){const out=[];for(const [k,v] of Object.entries(agg)){v.sort((a,b)=>a-b);out.push(k+' p50='+v[v.length>>1].toFixed(3));}console.error('PHASES n='+n+' '+out.join(' | '));for(const k in agg)agg[k]=[];}};return m})());(__m.get(data.generationId)??__m.set(data.generationId,{}).get(data.generationId))['E_answered']=performance.now();}
        const outcome = await this.deps.generations.finish(data.generationId, {
            status: 'completed',
            cost,
            result: recorded(data, payload),
            usage: result.usage,
            warnings,
            model: candidate.model,
            provider: resolved.provider.id,
            finalEndpointSlug: candidate.slug,
            routing: { attempts, answeredBy: candidate.slug },
            finishReason: result.finishReason,
            attemptsCount: attempts.length + 1,
            latencyMs: run.queueTimeMs + (firstTokenAt - out.started),
            queueTimeMs: run.queueTimeMs,
            generationTimeMs: out.finished - run.startedAt,
            upstreamId: result.upstreamId ?? null,
        });
        if (data.stickyKey)
            this.deps.stats.setSticky(data.stickyKey, candidate.slug);
        // The client is shown what was charged (the same number as the history and the ledger).
        payload.cost = outcome.charged.toFixed(10);
        {const __m=(globalThis.__T??=(()=>{const m=new Map();const agg={};let n=0;process.on('SIGUSR2',()=>{});setInterval(()=>{},1e9).unref();globalThis.__dump=()=>{};globalThis.__fin=(id)=>{const t=m.get(id);if(!t)return;m.delete(id);n++;const ks=Object.keys(t);for(let i=1;i<ks.length;i++){const k=ks[i-1]+'>'+ks[i];(agg[k]??=[]).push(t[ks[i]]-t[ks[i-1]]);}if(n%100===0){const out=[];for(const [k,v] of Object.entries(agg)){v.sort((a,b)=>a-b);out.push(k+' p50='+v[v.length>>1].toFixed(3));}console.error('PHASES n='+n+' '+out.join(' | '));for(const k in agg)agg[k]=[];}};return m})());(__m.get(data.generationId)??__m.set(data.generationId,{}).get(data.generationId))['F_settled']=performance.now();}
        await pub.send(outcome.applied ? { type: 'done', payload } : { type: 'cancelled' });
    }
    /** Calls one endpoint: a plain request, or a stream whose deltas go to the waiting API process as they come. */
    async attempt(data, c, pub, masker) {
        const { candidate, resolved, adapter, signal } = c;
        const text = adapter.text;
        const req = (0, format_utils_1.requestWithout)(data.request, resolved.endpoint.upstreamModel, candidate.dropParams);
        const spec = text.buildRequest(req, resolved.provider.apiKey ?? '', { defaultMaxOutputTokens: resolved.endpoint.maxOutputTokens });
        if (!req.stream) {
            const reply = await (0, attempt_loop_1.upstreamRequest)(this.deps, c, spec, signal);
            return { result: text.parseResponse(reply.json), firstTokenAt: Date.now() };
        }
        // The provider's concurrency cap holds for the whole stream.
        return this.deps.limiter.run(resolved.provider, async () => {
            const events = await this.deps.upstream.stream(resolved.provider.baseUrl, spec, { timeoutMs: resolved.provider.timeoutMs, extractError: adapter.extractError, signal });
            const parser = text.createStreamParser();
            const acc = new stream_accumulator_1.StreamAccumulator();
            const cut = (failure, maxOutputTokens) => new MidStreamFailure(failure, acc, candidate, resolved, maxOutputTokens);
            const unmasker = masker?.streamUnmasker();
            // A provider that ignores the output limit and never stops would hold the job (and the stream) forever: past
            // twice the output the request is reserved for, the stream is cut and billed up to that limit.
            const outputLimit = Math.min(req.maxOutputTokens ?? Infinity, resolved.endpoint.maxOutputTokens ?? provider_types_1.DEFAULT_MAX_OUTPUT_TOKENS);
            let announced = false;
            const handle = async (ev) => {
                if (unmasker && ev.type === 'text_delta') {
                    const text = unmasker.push(ev.text);
                    if (!text)
                        return;
                    ev = { ...ev, text };
                }
                if (unmasker && ev.type === 'finish') {
                    const rest = unmasker.flush();
                    if (rest)
                        await handle({ type: 'text_delta', text: rest });
                }
                if (ev.type === 'error') {
                    const failure = { reason: 'malformed_reply', message: ev.message, raw: ev.raw, fallback: true };
                    if (acc.produced)
                        throw cut(failure);
                    throw new upstream_error_1.UpstreamError(failure);
                }
                if (!announced && (ev.type === 'text_delta' || ev.type === 'tool_call_start' || ev.type === 'reasoning_delta')) {
                    announced = true;
                    await pub.send({ type: 'started', endpoint: candidate.slug, model: candidate.model });
                }
                acc.push(ev);
                if (acc.outputTokens() > 2 * outputLimit) {
                    throw cut({ reason: 'malformed_reply', message: `the provider kept streaming past max_output_tokens (${outputLimit})`, fallback: false }, outputLimit);
                }
                if (ev.type !== 'usage' && ev.type !== 'finish')
                    await pub.send({ type: 'delta', event: ev });
            };
            try {
                for await (const sse of events)
                    for (const ev of parser.push(sse))
                        await handle(ev);
                for (const ev of parser.end())
                    await handle(ev);
            }
            catch (e) {
                if (e instanceof MidStreamFailure)
                    throw e;
                const failure = (0, upstream_error_1.isUpstreamError)(e) ? e.failure : { reason: 'malformed_reply', message: e.message, fallback: true };
                // Before the first content byte we may still fall back; after it, the stream ends with an error.
                if (acc.produced)
                    throw cut(failure);
                throw (0, upstream_error_1.isUpstreamError)(e) ? e : new upstream_error_1.UpstreamError(failure);
            }
            return { result: acc.result((0, pricing_1.estimateInputTokens)(data.request)), firstTokenAt: acc.firstTokenAt ?? Date.now() };
        });
    }
    /** The stream broke after content reached the client: bill what was produced, end the stream with an error. */
    async failMidStream(data, e, attempts, pub, timing) {
        attempts.push((0, attempt_loop_1.attemptOf)(e.providerId, e.candidate.slug, e.failure));
        (0, attempt_loop_1.failedAttempt)(this.deps, e.candidate.slug, e.providerId, e.failure);
        const err = app_error_1.AppError.fromReason('provider_error', `The provider failed in the middle of the stream: ${e.failure.message}`, { raw: e.failure.raw ?? e.failure.message, provider_name: e.providerId, attempts });
        await this.settlePartial(data, e, attempts, pub, timing, err);
    }
    /**
     * The job was told to stop (shared/queue/cancel-channel.ts) and its upstream call is aborted. `cancelled`: the
     * generation already ended uncharged. `timeout` / `client_gone`: a stream that had sent content fails and is
     * billed for what was produced (decisions.md section 4; a cancelled generation never costs anything), one that
     * had not is cancelled uncharged.
     */
    async stopped(data, partial, attempts, pub, signal, timing) {
        const reason = (0, cancel_channel_1.stopReasonOf)(signal) ?? 'cancelled';
        if (!partial || reason === 'cancelled')
            return (0, attempt_loop_1.endStopped)(this.deps, pub, data.generationId, attempts, timing, data.traceId);
        this.deps.logger.info('generation stopped, upstream call aborted', { generationId: data.generationId, reason, trace_id: data.traceId });
        attempts.push({ provider: partial.providerId, endpoint: partial.candidate.slug, reason: 'provider_error', message: `stopped: ${reason}` });
        const err = reason === 'timeout'
            ? new app_error_1.AppError('REQUEST_TIMEOUT', 'Timed out waiting for the model', { metadata: { reason: 'upstream_timeout' } })
            : new app_error_1.AppError('REQUEST_TIMEOUT', 'The client disconnected: the stream was stopped and billed for what was produced');
        await this.settlePartial(data, partial, attempts, pub, timing, err);
    }
    /** Charges what a cut stream produced, records the ending, and sends the final message with that same cost. */
    async settlePartial(data, e, attempts, pub, timing, err) {
        const { candidate, providerId } = e;
        const result = e.partial.result((0, pricing_1.estimateInputTokens)(data.request));
        if (e.maxOutputTokens !== undefined)
            result.usage = { ...result.usage, outputTokens: Math.min(result.usage.outputTokens, e.maxOutputTokens) };
        const cost = (0, pricing_1.tokenCost)(e.resolved.endpoint.price, result.usage);
        const error = err.toStored();
        const payload = { result, model: candidate.model, endpoint: candidate.slug, provider: providerId, cost: cost.toFixed(10), warnings: data.warnings, attempts };
        const outcome = await this.deps.generations.finish(data.generationId, {
            status: 'failed',
            cost,
            error,
            result: recorded(data, payload),
            usage: result.usage,
            model: candidate.model,
            provider: providerId,
            finalEndpointSlug: candidate.slug,
            routing: { attempts },
            finishReason: 'error',
            attemptsCount: attempts.length,
            queueTimeMs: timing.queueTimeMs,
            generationTimeMs: Date.now() - timing.startedAt,
        });
        // What the event shows is what was charged: when another ending won (a cancel), that ending's charge (0).
        payload.cost = outcome.charged.toFixed(10);
        await pub.send({ type: 'failed', error, payload });
    }
}
exports.TextExecutor = TextExecutor;
/** The payload as the generation's record keeps it: without the text when the caller asked for `store: false`. */
function recorded(data, payload) {
    return data.store === false ? { ...payload, result: (0, unstored_text_1.withoutText)(payload.result) } : payload;
}
/** The masker plugin around one job: masks the request once, unmasks what comes back, times both. */
class MaskedRun {
    data;
    session = new masker_1.MaskSession();
    ms = 0;
    constructor(original) {
        const started = performance.now();
        const mask = (t) => this.session.mask(t);
        const input = original.request.input.map((item) => {
            if (item.type === 'message')
                return { ...item, content: item.content.map((c) => (c.type === 'input_text' || c.type === 'output_text' ? { ...c, text: mask(c.text) } : c)) };
            if (item.type === 'function_call_output')
                return { ...item, output: mask(item.output) };
            return item;
        });
        const request = { ...original.request, input, instructions: original.request.instructions && mask(original.request.instructions) };
        this.data = { ...original, request };
        this.ms += performance.now() - started;
    }
    streamUnmasker() {
        return this.session.streamUnmasker();
    }
    unmaskResult(result) {
        const started = performance.now();
        for (const o of result.output) {
            if (o.type === 'message')
                for (const c of o.content)
                    c.text = this.session.unmask(c.text);
            if (o.type === 'function_call')
                o.arguments = this.session.unmask(o.arguments);
        }
        this.ms += performance.now() - started;
    }
    usage() {
        return { masker: { operations: ['mask', 'unmask'], latency_ms: Math.round(this.ms * 1000) / 1000, cost_rub: 0 }, total_cost_rub: 0 };
    }
}
