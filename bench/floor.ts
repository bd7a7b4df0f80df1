/**
 * The durable path's floor (issue 12; bench/rounds/06-what-v8-kept.md "The floor"): the I/O one Switchyard chat
 * completion must do to keep its guarantees, with none of the service around it. A bare `node:http` server that, for each
 * `POST /v1/chat/completions`, does what the service's hot path does at concurrency 1, with the service's own
 * pieces and nothing else:
 *
 *   1. the key: hashed and looked up once, then from memory;
 *   2. the job (`addJob`, claimed: one Redis script that adds it and makes it active here);
 *   3. the provider call (the service's undici client), granted from a lease taken once (as the service's `drawn`
 *      path: leases.ts), its record gathered for a group commit beside the call (`Ledger.openDrawn`, background);
 *   4. the settlement promised (`SettlementJournal.promise`: one script), then the reply;
 *   5. after the reply: the close, with the record when it still waits for its group (`Ledger.close`'s `after`), then
 *      the promise erased and the job completed in one write (BullMQ's `moveToFinished`), as the service's.
 *
 * What it leaves out is what the service adds around that I/O: Express and validation, routing and fallbacks, the
 * worker's framework, mapping to and from the provider's format, metrics, logs, history's fields. Run through the
 * harness in Switchyard's place (`SY_ENTRY=dist/bench/floor.js STREAM=0 bash bench/side-by-side.sh`): its added
 * latency is what the guarantees cost on the machine; Switchyard's minus it is what the service costs on top.
 *
 * Environment: as `npm start` (DATABASE_URL, REDIS_URL, QUEUE_PREFIX, SWITCHYARD_CATALOG, PORT); the first model of
 * the catalog and its first endpoint serve every request. Not a product: it answers nothing but that one route.
 */
import http from 'node:http';
import { Job, Queue } from 'bullmq';
import { claimedJobJson } from '../shared/queue/claims';
import { connectDb } from '../shared/db/client';
import { createRedis } from '../shared/queue/redis';
import { addJob, LocalClaimers } from '../shared/queue/claims';
import { Ledger } from '../shared/billing/ledger';
import { SettlementJournal } from '../shared/billing/settlement-journal';
import { estimateTokens, textBound, tokenCost } from '../shared/billing/pricing';
import { openRowOf } from '../shared/services/generation.service';
import { closeRowOf } from '../shared/billing/ledger';
import { hashApiKey } from '../shared/auth/api-keys';
import { newId } from '../shared/ids';
import { loadCatalog } from '../shared/catalog/load-catalog';
import { createUpstreamClient } from '../shared/providers/api';

interface Owner {
  organizationId: string;
  apiKeyId: string;
  userId: string | null;
}

async function main(): Promise<void> {
  const env = process.env;
  const { db, pool } = connectDb(env.DATABASE_URL!);
  const redis = createRedis(env.REDIS_URL!, { patient: true });
  const prefix = env.QUEUE_PREFIX ?? '{switchyard}';
  const ledger = new Ledger(db, () => new Date(), { pool });
  const journal = new SettlementJournal(redis, prefix);
  const queue = new Queue('floor', { connection: redis, prefix });
  const upstream = createUpstreamClient();
  const catalog = loadCatalog(env.SWITCHYARD_CATALOG!, env);
  const [modelId, model] = Object.entries(catalog.models)[0]!;
  const endpoint = model.endpoints[0]!;
  const provider = catalog.providers[endpoint.provider]!;

  // Every job this process adds is claimed here: a claimer with a free slot always.
  const claimed = new Map<string, { raw: string[]; token: string }>();
  let tickets = 0;
  const claimers = new LocalClaimers();
  claimers.offer(queue.qualifiedName, {
    hold: () => {
      const token = `floor:claim:${++tickets}`;
      return { token, lockDuration: 30_000, start: (raw, jobId) => claimed.set(jobId, { raw, token }), release: () => undefined };
    },
  });

  const owners = new Map<string, Owner>();
  const ownerOf = async (authorization: string | undefined): Promise<Owner | null> => {
    const hash = hashApiKey((authorization ?? '').replace(/^Bearer /, ''));
    let owner = owners.get(hash);
    if (!owner) {
      const key = await db.apiKey.findUnique({ where: { keyHash: hash }, select: { id: true, organizationId: true, userId: true } });
      if (!key) return null;
      owners.set(hash, (owner = { organizationId: key.organizationId, apiKeyId: key.id, userId: key.userId }));
    }
    return owner;
  };

  // One lease a key, large enough for any run of the harness (the service's are sized by the caller's rate).
  const leases = new Map<string, string>();
  const leaseOf = async (owner: Owner): Promise<string> => {
    let id = leases.get(owner.apiKeyId);
    if (!id) {
      id = newId('lease');
      const taken = await ledger.takeLease({ id, ...owner, amount: '10000', headroom: '0', expiresAt: new Date(Date.now() + 3_600_000) });
      if (!('granted' in taken)) throw new Error(`no lease: ${taken.refused}`);
      leases.set(owner.apiKeyId, id);
    }
    return id;
  };

  const complete = async (id: string, organizationId: string, row: ReturnType<typeof closeRowOf>, recorded: Promise<unknown>) => {
    await ledger.close(row, { background: true, after: recorded });
    // The erase and the job's completion leave in one write, as the service's (SettlementJournal.erase).
    journal.erase(organizationId, id);
    const c = claimed.get(id);
    claimed.delete(id);
    if (c) await Job.fromJSON(queue, claimedJobJson(c.raw), id).moveToCompleted('done', c.token, false);
  };

  const serve = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.url === '/readyz') return void res.end('ok');
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return void res.writeHead(404).end();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages: Array<{ content: string }>; max_tokens?: number };
    const owner = await ownerOf(req.headers.authorization);
    if (!owner) return void res.writeHead(401).end();

    const id = newId('gen');
    const inputTokens = body.messages.reduce((n, m) => n + estimateTokens(String(m.content)), 0);
    const bound = textBound(endpoint.price, inputTokens, body.max_tokens ?? endpoint.maxOutputTokens ?? 4096);
    // Granted from the lease; the job claimed here (one Redis script); the record gathered beside the provider call.
    const lease = await leaseOf(owner);
    await addJob(queue, { generationId: id, organizationId: owner.organizationId, request: body }, { jobId: id, removeOnComplete: true }, { ticket: claimers.hold(queue.qualifiedName)! });
    const gen = { id, ...owner, model: modelId, unifiedModelId: modelId, requestType: 'chat', apiType: 'chat_completions', responseMode: 'sync', request: body, bound } as const;
    const recorded = ledger.openDrawn(openRowOf(gen, lease), { background: true });

    const reply = await upstream.request(
      provider.baseUrl,
      { method: 'POST', path: '/chat/completions', headers: { authorization: `Bearer ${provider.apiKey ?? ''}` }, body: { ...body, model: endpoint.upstreamModel } },
      { timeoutMs: provider.timeoutMs },
    );
    const answer = reply.json as { usage: { prompt_tokens: number; completion_tokens: number } };
    const usage = { inputTokens: answer.usage.prompt_tokens, outputTokens: answer.usage.completion_tokens };
    const cost = tokenCost(endpoint.price, usage);
    const row = closeRowOf(id, { status: 'completed', cost, result: answer, usage, model: modelId, provider: provider.id, finalEndpointSlug: endpoint.slug });
    const text = JSON.stringify({ ...answer, id, model: modelId });
    // The reply waits for the promise, not for the record's commit (the service's promise carries the record).
    await journal.promise(owner.organizationId, { row, replyTo: null, message: { type: 'done', payload: { cost: cost.toFixed(10) } } });
    res.writeHead(200, { 'content-type': 'application/json' }).end(text);
    await complete(id, owner.organizationId, row, recorded);
  };

  http
    .createServer((req, res) => {
      serve(req, res).catch((err: unknown) => {
        console.error(err);
        if (!res.headersSent) res.writeHead(500).end();
      });
    })
    .listen(Number(env.PORT ?? 3000), '127.0.0.1');
  // The harness stops it with SIGINT: an exit of its own lets `--cpu-prof` write its profile.
  process.once('SIGINT', () => process.exit(0));
}

void main();
