"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.GenerationPublisher = exports.GenerationBus = void 0;
const node_crypto_1 = require("node:crypto");
const ioredis_1 = require("ioredis");
/** Id of the bus's own probe messages on a Redis Cluster (never a generation id). */
const PROBE = '__probe__';
/**
 * The buses of this process by reply channel. A worker whose job's `replyTo` names one of them (the API request
 * waits in the same process: `npm start` serves both) hands its messages over directly, without a PUBLISH and
 * the subscriber's parse; Redis carries only what crosses processes. Process-wide by nature, hence module state.
 */
const localBuses = new Map();
/**
 * Worker → API delivery over Redis pub/sub. Each API process subscribes ONCE to its own reply channel and
 * names it in every job it enqueues (`replyTo`), so a request costs no SUBSCRIBE round trips, and a stream
 * started on one API process is served whichever worker process runs it. The database stays the source of
 * truth: a waiter that misses its message (a Redis outage) falls back to reading the generation.
 */
class GenerationBus {
    pub;
    sub;
    channel;
    waiters = new Map();
    started;
    probes = new Map();
    constructor(pub, sub, prefix, 
    /** Take messages from workers of this process directly (default); false: only through Redis. */
    opts = {}) {
        this.pub = pub;
        this.sub = sub;
        this.channel = `${prefix}:reply:${(0, node_crypto_1.randomUUID)()}`;
        if (opts.inProcess !== false)
            localBuses.set(this.channel, this);
    }
    /** Stops taking messages from workers of this process. */
    close() {
        localBuses.delete(this.channel);
    }
    /** A message from a worker of this process: handed to its waiter as a message from Redis would be. */
    deliver(m) {
        try {
            this.waiters.get(m.id)?.(m); if(m.type==='done'){{const __m=(globalThis.__T??=(()=>{const m=new Map();const agg={};let n=0;process.on('SIGUSR2',()=>{});setInterval(()=>{},1e9).unref();globalThis.__dump=()=>{};globalThis.__fin=(id)=>{const t=m.get(id);if(!t)return;m.delete(id);n++;const ks=Object.keys(t);for(let i=1;i<ks.length;i++){const k=ks[i-1]+'>'+ks[i];(agg[k]??=[]).push(t[ks[i]]-t[ks[i-1]]);}if(n%100===0){const out=[];for(const [k,v] of Object.entries(agg)){v.sort((a,b)=>a-b);out.push(k+' p50='+v[v.length>>1].toFixed(3));}console.error('PHASES n='+n+' '+out.join(' | '));for(const k in agg)agg[k]=[];}};return m})());(__m.get(m.id)??__m.set(m.id,{}).get(m.id))['G_delivered']=performance.now();} globalThis.__fin(m.id);}
        }
        catch {
            // A waiter's failure is the waiter's: it must not fail the worker that delivered.
        }
    }
    /** Subscribes the API process's reply channel (idempotent). */
    start() {
        if (!this.sub)
            throw new Error('this bus has no subscriber connection');
        const sub = this.sub;
        this.started ??= (async () => {
            // ioredis resubscribes after a reconnect, but what was published meanwhile is gone: tell every waiter.
            let subscribed = false;
            const recheck = () => {
                if (!subscribed)
                    return;
                for (const [id, handler] of this.waiters)
                    handler({ type: 'recheck', id, seq: 0 });
            };
            if (sub instanceof ioredis_1.Cluster) {
                // On a Redis Cluster the subscription lives on one node, and ioredis moves it to another in the background
                // after a reconnect or failover: tell the waiters only once a probe of our own comes back through it, so
                // the database they re-read is not older than the subscription.
                let probing = false;
                const probeOnce = async () => {
                    const token = (0, node_crypto_1.randomUUID)();
                    const back = new Promise((resolve) => this.probes.set(token, resolve));
                    try {
                        await publish(this.pub, this.channel, JSON.stringify({ id: PROBE, seq: 0, type: 'recheck', token })).catch(() => undefined);
                        return await Promise.race([back.then(() => true), new Promise((r) => setTimeout(() => r(false), 300).unref())]);
                    }
                    finally {
                        this.probes.delete(token);
                    }
                };
                // `moved`: a node left or the connection came back. Otherwise a periodic check that the subscription
                // still delivers; only when it does not are the waiters told.
                const ensure = async (moved) => {
                    if (!subscribed || probing)
                        return;
                    probing = true;
                    let lost = false;
                    try {
                        // Two probes answered in a row, 300 ms apart: ioredis may still swap the subscriber node right after
                        // the first one came back.
                        let streak = 0;
                        for (let i = 0; i < 100 && streak < (moved ? 2 : 1) && sub.status !== 'end' && this.pub.status !== 'end'; i++) {
                            if (await probeOnce()) {
                                streak++;
                                if (streak < 2 && moved)
                                    await new Promise((r) => setTimeout(r, 300).unref());
                            }
                            else {
                                streak = 0;
                                lost = true;
                                // ioredis sometimes picks a new subscriber node without carrying the channel over: subscribe
                                // again (harmless when it is there).
                                if (i % 3 === 2)
                                    await sub.subscribe(this.channel).catch(() => undefined);
                            }
                        }
                    }
                    finally {
                        probing = false;
                    }
                    if (moved || lost)
                        recheck();
                };
                sub.on('ready', () => void ensure(true));
                sub.on('-node', () => void ensure(true));
                const every = setInterval(() => void ensure(false), 5000);
                every.unref();
                sub.once('end', () => clearInterval(every));
            }
            else {
                sub.on('ready', recheck);
            }
            sub.on('message', (_channel, text) => {
                let m;
                try {
                    m = JSON.parse(text);
                }
                catch {
                    return;
                }
                if (m.id === PROBE)
                    this.probes.get(m.token ?? '')?.();
                else
                    this.waiters.get(m.id)?.(m);
            });
            await sub.subscribe(this.channel);
            subscribed = true;
        })();
        return this.started;
    }
    /** Receives the messages of one generation until the returned function is called. */
    listen(id, handler) {
        this.waiters.set(id, handler);
        return () => {
            if (this.waiters.get(id) === handler)
                this.waiters.delete(id);
        };
    }
    get listening() {
        return this.waiters.size;
    }
}
exports.GenerationBus = GenerationBus;
/** The worker side: numbered messages to the reply channel named in the job. */
class GenerationPublisher {
    pub;
    channel;
    id;
    seq = 0;
    constructor(pub, channel, id) {
        this.pub = pub;
        this.channel = channel;
        this.id = id;
    }
    send(event) {
        if (!this.channel)
            return Promise.resolve();
        const message = { ...event, id: this.id, seq: ++this.seq };
        const local = localBuses.get(this.channel);
        if (local) {
            local.deliver(message);
            return Promise.resolve();
        }
        return publish(this.pub, this.channel, JSON.stringify(message)).catch(() => undefined);
    }
}
exports.GenerationPublisher = GenerationPublisher;
// A Redis Cluster connection sends a keyless PUBLISH to a random node each time, and messages reach the
// subscriber in the order each node relays them: deltas would arrive out of order. A script naming the channel
// as its key always runs on the master of the channel's slot, so one generation's messages keep their order.
const PUBLISH_SCRIPT = `return redis.call('PUBLISH', KEYS[1], ARGV[1])`;
function publish(pub, channel, text) {
    if (!(pub instanceof ioredis_1.Cluster))
        return pub.publish(channel, text);
    if (!('syPublish' in pub))
        pub.defineCommand('syPublish', { numberOfKeys: 1, lua: PUBLISH_SCRIPT });
    return pub.syPublish(channel, text);
}
