"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.GenerationGateway = void 0;
exports.routed = routed;
const app_error_1 = require("../../shared/errors/app-error");
const job_catalog_1 = require("../../shared/queue/job-catalog");
const generation_service_1 = require("../../shared/services/generation.service");
const generation_bus_1 = require("../../shared/queue/generation-bus");
const principal_1 = require("../../shared/auth/principal");
const money_1 = require("../../shared/billing/money");
const mailbox_1 = require("./mailbox");
const cancel_channel_1 = require("../../shared/queue/cancel-channel");
/** The order fields a planned route gives: the serving model, the candidates in order, what was dropped, the plan's warnings. */
function routed(route) {
    return { primary: route.primary, candidates: route.candidates, dropped: route.plan.dropped, warnings: route.plan.warnings };
}
/** How often a repeated request reads the state of the generation it attached to. */
const REPLAY_POLL_MS = 150;
/**
 * Turns a request into a queued generation: reserve and record (one statement), listen, enqueue. Then waits
 * for the worker's messages. Shared by every generation route.
 */
class GenerationGateway {
    generations;
    queues;
    bus;
    logger;
    stops;
    constructor(generations, queues, bus, logger, 
    /** Publishes stop messages to the workers (cancel-channel.ts). */
    stops) {
        this.generations = generations;
        this.queues = queues;
        this.bus = bus;
        this.logger = logger;
        this.stops = stops;
    }
    get replyChannel() {
        return this.bus.channel;
    }
    /**
     * Reserves, records and enqueues one generation of any kind: the record and the job are built here, once, from
     * the order (who asks, the route, the bound and the kind's own job fields).
     */
    order(o) {
        const owner = (0, principal_1.ownerOf)(o.caller.principal);
        const replyTo = o.mode === 'async' ? null : this.replyChannel;
        return this.submit(o.queue, {
            id: o.id,
            ...owner,
            model: o.model ?? o.primary.id,
            unifiedModelId: o.primary.id,
            modelDisplayName: o.primary.displayName,
            requestType: o.requestType,
            apiType: o.apiType,
            responseMode: o.mode,
            request: o.request,
            warnings: o.recordWarnings?.length ? o.recordWarnings : undefined,
            routing: { ...(o.routingQueue && { queue: o.queue }), candidates: o.candidates.map((c) => c.slug), ...(o.dropped !== undefined && { dropped: o.dropped }) },
            callBackUrl: o.callBackUrl ?? null,
            sourceGenerationId: o.sourceGenerationId ?? null,
            previousResponseId: o.previousResponseId ?? null,
            traceId: o.caller.traceId,
            bound: o.bound,
            minimum: o.minimum,
            idempotency: o.caller.idempotency,
        }, (granted) => ({ ...o.job(granted), generationId: o.id, ...owner, candidates: o.candidates, warnings: o.warnings, replyTo, traceId: o.caller.traceId }), { listen: replyTo !== null, forget: o.forget });
    }
    /**
     * `job(granted)` builds the job payload once the reservation is known (text requests may have their
     * `max_output_tokens` lowered to what was granted). `forget` removes the job from Redis once it ends (its
     * payload carries the caller's text, which `store: false` asks us not to keep).
     */
    async submit(queue, gen, job, opts) {
        {const __m=(globalThis.__T??=(()=>{const m=new Map();const agg={};let n=0;process.on('SIGUSR2',()=>{});setInterval(()=>{},1e9).unref();globalThis.__dump=()=>{};globalThis.__fin=(id)=>{const t=m.get(id);if(!t)return;m.delete(id);n++;const ks=Object.keys(t);for(let i=1;i<ks.length;i++){const k=ks[i-1]+'>'+ks[i];(agg[k]??=[]).push(t[ks[i]]-t[ks[i-1]]);}if(n%100===0){const out=[];for(const [k,v] of Object.entries(agg)){v.sort((a,b)=>a-b);out.push(k+' p50='+v[v.length>>1].toFixed(3));}console.error('PHASES n='+n+' '+out.join(' | '));for(const k in agg)agg[k]=[];}};return m})());(__m.get(gen.id)??__m.set(gen.id,{}).get(gen.id))['A_submit']=performance.now();}
        const created = await this.generations.createOrReplay(gen);
        {const __m=(globalThis.__T??=(()=>{const m=new Map();const agg={};let n=0;process.on('SIGUSR2',()=>{});setInterval(()=>{},1e9).unref();globalThis.__dump=()=>{};globalThis.__fin=(id)=>{const t=m.get(id);if(!t)return;m.delete(id);n++;const ks=Object.keys(t);for(let i=1;i<ks.length;i++){const k=ks[i-1]+'>'+ks[i];(agg[k]??=[]).push(t[ks[i]]-t[ks[i-1]]);}if(n%100===0){const out=[];for(const [k,v] of Object.entries(agg)){v.sort((a,b)=>a-b);out.push(k+' p50='+v[v.length>>1].toFixed(3));}console.error('PHASES n='+n+' '+out.join(' | '));for(const k in agg)agg[k]=[];}};return m})());(__m.get(gen.id)??__m.set(gen.id,{}).get(gen.id))['B_opened']=performance.now();}
        if ('replayOf' in created)
            return this.attach(created.replayOf, queue, gen, opts.listen);
        const granted = created.granted;
        const mailbox = opts.listen ? new mailbox_1.Mailbox() : undefined;
        const detach = mailbox ? this.bus.listen(gen.id, (m) => mailbox.put(m)) : () => { };
        try {
            await this.queues[queue].add(queue, job(granted), { ...job_catalog_1.JOB_OPTIONS[queue], jobId: gen.id, delay: opts.delayMs, ...(opts.forget && { removeOnComplete: true, removeOnFail: true }) });
        }
        catch (e) {
            detach();
            this.logger.error('enqueue failed', { err: e, generationId: gen.id, trace_id: gen.traceId });
            await this.generations.finish(gen.id, { status: 'failed', error: new app_error_1.AppError('SERVICE_UNAVAILABLE', 'The queue is unavailable').toStored() }).catch(() => undefined);
            throw new app_error_1.AppError('SERVICE_UNAVAILABLE', 'Service temporarily unavailable: repeat later');
        }
        {const __m=(globalThis.__T??=(()=>{const m=new Map();const agg={};let n=0;process.on('SIGUSR2',()=>{});setInterval(()=>{},1e9).unref();globalThis.__dump=()=>{};globalThis.__fin=(id)=>{const t=m.get(id);if(!t)return;m.delete(id);n++;const ks=Object.keys(t);for(let i=1;i<ks.length;i++){const k=ks[i-1]+'>'+ks[i];(agg[k]??=[]).push(t[ks[i]]-t[ks[i-1]]);}if(n%100===0){const out=[];for(const [k,v] of Object.entries(agg)){v.sort((a,b)=>a-b);out.push(k+' p50='+v[v.length>>1].toFixed(3));}console.error('PHASES n='+n+' '+out.join(' | '));for(const k in agg)agg[k]=[];}};return m})());(__m.get(gen.id)??__m.set(gen.id,{}).get(gen.id))['C_added']=performance.now();}
        return { id: gen.id, queue, granted, mailbox, detach, keyed: gen.idempotency !== undefined };
    }
    /**
     * A repeated request (same Idempotency-Key, same body) joins the generation the first one made. Its worker
     * replies to the first request's API process, so the repeat reads the generation's state from the database
     * until it ends and hands the outcome to the route like a worker message: a finished generation is replayed
     * from what it stored, a running one is waited for. A stream cannot join one that is still streaming (its
     * earlier deltas went to the first client): 409.
     */
    async attach(id, queue, gen, listen) {
        const first = await this.generations.state(id);
        // Both 409s below pass once the first request has gone further: the SDKs may repeat them (x-should-retry).
        if (!first)
            throw new app_error_1.AppError('CONFLICT', `The first request with this Idempotency-Key is still being accepted: repeat in a moment`, { metadata: { generation_id: id }, retry: true });
        if (gen.responseMode === 'stream' && generation_service_1.RUNNING.has(first.status)) {
            throw new app_error_1.AppError('CONFLICT', `Generation ${id} of this Idempotency-Key is still streaming to the first request: repeat once it has ended to replay it`, {
                metadata: { generation_id: id },
                retry: true,
            });
        }
        const base = { id, queue, granted: money_1.ZERO, keyed: true, replayed: true };
        if (!listen)
            return { ...base, detach: () => { } };
        const mailbox = new mailbox_1.Mailbox();
        let stopped = false;
        const deliver = (g) => {
            if (generation_service_1.RUNNING.has(g.status))
                return false;
            if (g.status === 'completed')
                mailbox.put({ type: 'done', payload: g.result, id, seq: 1 });
            else if (g.status === 'failed')
                mailbox.put({ type: 'failed', error: g.error, id, seq: 1 });
            else
                mailbox.put({ type: 'cancelled', id, seq: 1 });
            return true;
        };
        if (!deliver(first)) {
            void (async () => {
                while (!stopped) {
                    await new Promise((r) => setTimeout(r, REPLAY_POLL_MS));
                    if (stopped)
                        return;
                    const g = await this.generations.state(id).catch(() => null);
                    if (g && deliver(g))
                        return;
                }
            })();
        }
        return { ...base, mailbox, detach: () => void (stopped = true) };
    }
    /**
     * The final message of a generation, or null after `timeoutMs`. Progress messages are skipped. After a Redis
     * reconnect (`recheck`) the final state is read from the database with `reread`, when the caller gives one.
     */
    async waitFinal(sub, timeoutMs, reread) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
            const left = deadline - Date.now();
            if (left <= 0)
                return null;
            const m = await sub.mailbox.next(left);
            if (!m)
                return null;
            if (m.type === 'done' || m.type === 'failed' || m.type === 'cancelled')
                return m;
            if (m.type === 'recheck' && reread) {
                const settled = await reread().catch(() => null);
                if (settled)
                    return settled;
            }
        }
    }
    /**
     * Ends a running generation as cancelled, uncharged, unless it ended first (then `applied` is false and its ending
     * stands). A job still waiting is removed; a job holding an upstream task (a media step waiting for its next
     * poll) runs once more at once, to cancel that task; a running job is told to abort its upstream call. Whoever
     * waits for the generation's reply (any API process) is told it was cancelled.
     */
    async cancel(id, queue) {
        const job = await this.queues[queue].getJob(id).catch(() => undefined);
        const data = job?.data;
        const holdsTask = job !== undefined && data?.step !== undefined && (await job.getState().catch(() => 'unknown')) === 'delayed';
        if (job && !holdsTask)
            await job.remove().catch(() => undefined); // fails harmlessly when the job is already running
        const r = await this.generations.finish(id, { status: 'cancelled' });
        if (!r.applied)
            return false;
        // A job holding a task runs again now to cancel it upstream (it must not be stopped); a running job stops calling
        // its provider (the upstream request is aborted): nobody will receive the work.
        if (holdsTask)
            await job.promote().catch(() => undefined);
        else
            await this.stop(id, 'cancelled');
        if (data?.replyTo)
            await new generation_bus_1.GenerationPublisher(this.stops.redis, data.replyTo, id).send({ type: 'cancelled' }).catch(() => undefined);
        return true;
    }
    /**
     * Tells the worker running generation `id` to abort its upstream call. With `timeout` or `client_gone` (a
     * stream that already sent content) the worker settles the generation for what was produced and sends its
     * final message; with `cancelled` the generation has already ended uncharged.
     */
    stop(id, reason) {
        return (0, cancel_channel_1.publishStop)(this.stops.redis, this.stops.prefix, id, reason);
    }
}
exports.GenerationGateway = GenerationGateway;
