import { createHmac, timingSafeEqual } from 'node:crypto';
import { closeRowOf } from '../../shared/billing/ledger';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UnrecoverableError, type Job } from 'bullmq';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import type { CallbackJobData } from '../../shared/queue/job-catalog';
import { callbackJobId, checkCallbackUrl, CallbackHostUnresolved, CallbackService, CallbackUrlError, isPrivateAddress, postCallback, signCallback } from '../../shared/services/callbacks.service';
import { QUEUES } from '../../shared/queue/queue-names';
import { waitFor, waitUntil } from '../helpers/until';
import { newId } from '../../shared/ids';
import type { MediaJobData } from '../../shared/queue/job-catalog';
import { MediaExecutor } from '../../workers/services/media-executor';
import { stuckGenerationReaper } from '../../workers/processors/reap-stuck-generations.processor';
import { callbackProcessor } from '../../workers/processors/callback.processor';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

/** The Standard Webhooks headers a receiver passes to `Webhook.verify` (docs/callbacks.md). */
function webhookHeaders(h: IncomingHttpHeaders): Record<string, string> {
  return { 'webhook-id': String(h['webhook-id']), 'webhook-timestamp': String(h['webhook-timestamp']), 'webhook-signature': String(h['webhook-signature']) };
}

/** What docs/callbacks.md tells a receiver to do. */
function verifySignature(rawBody: Buffer, header: string | undefined, secret: string): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`);
  const given = Buffer.from(header ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

describe('the private-address guard', () => {
  it.each([
    '127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255',
    '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '64:ff9b::a00:1', '2002:c0a8:101::1', 'not-an-ip',
  ])('refuses %s', (ip) => expect(isPrivateAddress(ip)).toBe(true));

  // Issue 10.7: every IPv6 special-purpose range that can reach private space (IANA IPv6 special-purpose registry).
  it.each([
    ['local-use NAT64 64:ff9b:1::/48', '64:ff9b:1::7f00:1'],
    ['local-use NAT64, public-looking suffix', '64:ff9b:1:ffff::808:808'],
    ['SIIT ::ffff:0:0:0/96 (loopback)', '::ffff:0:7f00:1'],
    ['SIIT ::ffff:0:0:0/96 (10/8)', '::ffff:0:a00:1'],
    ['SIIT, dotted', '::ffff:0:169.254.169.254'],
    ['NAT64 64:ff9b::/96 with 127/8', '64:ff9b::127.0.0.1'],
    ['NAT64 with 169.254/16 (metadata)', '64:ff9b::a9fe:a9fe'],
    ['6to4 with 10/8', '2002:a00:1::1'],
    ['6to4 with 169.254/16', '2002:a9fe:a9fe::'],
    ['Teredo 2001::/32', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
    ['IETF protocol assignments 2001::/23', '2001:2::1'],
    ['ORCHIDv2', '2001:20::1'],
    ['discard 100::/64', '100::1'],
    ['dummy prefix 100:0:0:1::/64', '100:0:0:1::1'],
    ['documentation 2001:db8::/32', '2001:db8::1'],
    ['documentation 3fff::/20', '3fff::1'],
    ['SRv6 5f00::/16', '5f00::1'],
    ['unique local fc00::/7', 'fdff:ffff::1'],
    ['link-local fe80::/10', 'febf::1'],
    ['link-local with a zone', 'fe80::1%eth0'],
    ['site-local fec0::/10', 'fec0::1'],
    ['multicast ff00::/8', 'ff05::2'],
    ['unspecified ::/128', '0:0:0:0:0:0:0:0'],
    ['loopback ::1/128, long form', '0:0:0:0:0:0:0:1'],
    ['IPv4-compatible ::/96', '::7f00:1'],
    ['outside global unicast (unassigned 4000::/2)', '4000::1'],
    ['outside global unicast (unassigned 1::/16)', '1::1'],
    ['mapped 6to4 relay anycast', '::ffff:192.88.99.1'],
  ])('refuses %s: %s', (_name, ip) => expect(isPrivateAddress(ip)).toBe(true));

  it.each(['http://[64:ff9b:1::7f00:1]/', 'http://[::ffff:0:7f00:1]/', 'http://[64:ff9b::7f00:1]/', 'http://[2002:7f00:1::]/', 'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', 'http://[::ffff:0:127.0.0.1]:8080/x'])(
    'refuses the callback URL %s',
    async (url) => {
      await expect(checkCallbackUrl(url, { allowPrivate: false, lookup: async () => [] })).rejects.toThrow(/private or loopback/);
    },
  );

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2a00:1450:4001::200e', '64:ff9b::808:808', '2002:808:808::1', '::ffff:0:808:808'])('accepts %s', (ip) =>
    expect(isPrivateAddress(ip)).toBe(false),
  );

  const lookup = (answers: Record<string, string[]>) => async (host: string) => {
    if (!answers[host]) throw new Error('ENOTFOUND');
    return answers[host].map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

  it('resolves the host first and refuses it when any address is private', async () => {
    const l = lookup({ 'ok.example': ['93.184.216.34', '2606:2800:220:1::1'], 'mixed.example': ['93.184.216.34', '10.0.0.5'], 'v6.example': ['fd00::5'] });
    await expect(checkCallbackUrl('https://ok.example/hook', { allowPrivate: false, lookup: l })).resolves.toBeInstanceOf(URL);
    await expect(checkCallbackUrl('https://mixed.example/hook', { allowPrivate: false, lookup: l })).rejects.toThrow(/private.*10\.0\.0\.5/);
    await expect(checkCallbackUrl('https://v6.example/hook', { allowPrivate: false, lookup: l })).rejects.toThrow(CallbackUrlError);
    await expect(checkCallbackUrl('https://nowhere.example/hook', { allowPrivate: false, lookup: l })).rejects.toThrow(/does not resolve/);
  });

  it('refuses other schemes, malformed URLs and literal private addresses; CALLBACK_ALLOW_PRIVATE lifts only the address rule', async () => {
    for (const url of ['ftp://example.com/x', 'file:///etc/passwd', 'javascript:alert(1)', 'not a url', 'http://127.0.0.1:8080/x', 'http://[::1]/x', 'http://169.254.169.254/latest/meta-data']) {
      await expect(checkCallbackUrl(url, { allowPrivate: false, lookup: async () => [] })).rejects.toThrow(CallbackUrlError);
    }
    await expect(checkCallbackUrl('http://127.0.0.1:8080/x', { allowPrivate: true })).resolves.toBeInstanceOf(URL);
    await expect(checkCallbackUrl('ftp://127.0.0.1/x', { allowPrivate: true })).rejects.toThrow(/http or https/);
  });

  it('signs with HMAC-SHA256 of the exact body, hex, prefixed sha256=', () => {
    expect(signCallback('key', 'The quick brown fox jumps over the lazy dog')).toBe('sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
  });

  it('tells a host that does not resolve apart (refused in a request, retried at delivery)', async () => {
    const failing = async () => {
      throw new Error('EAI_AGAIN');
    };
    const e = await checkCallbackUrl('https://flaky.example/hook', { allowPrivate: false, lookup: failing }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(CallbackHostUnresolved);
    expect(e).toBeInstanceOf(CallbackUrlError);
  });

  it('gives a delivery 10 s (here 300 ms) in all: a receiver trickling its reply does not hold it longer', async () => {
    const trickler = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      const t = setInterval(() => res.write('.'), 50);
      res.on('close', () => clearInterval(t));
    });
    await new Promise<void>((resolve) => trickler.listen(0, '127.0.0.1', resolve));
    try {
      // The trickle never ends and is never silent: only a deadline for the whole delivery ends it.
      const url = `http://127.0.0.1:${(trickler.address() as AddressInfo).port}/slow`;
      await expect(postCallback({ url, body: '{}', secret: 's', status: 'completed', id: 'cb-gen_x', sentAt: new Date() }, { allowPrivate: true, timeoutMs: 300 })).rejects.toThrow(/within 300 ms/);
    } finally {
      trickler.closeAllConnections();
      await new Promise((r) => trickler.close(r));
    }
  });

  it('does not deliver to a private address unless allowed', async () => {
    await expect(postCallback({ url: 'http://127.0.0.1:9/hook', body: '{}', secret: 's', status: 'completed', id: 'cb-gen_x', sentAt: new Date() }, { allowPrivate: false })).rejects.toThrow(CallbackUrlError);
  });
});

interface Received {
  headers: IncomingHttpHeaders;
  raw: Buffer;
  path: string;
}

describe('a private callBackUrl refused in a request', () => {
  const ask = (stack: TestStack, org: StackOrg) =>
    request(stack.app).post('/v1/media').set(org.auth).send({ model: STACK_MODELS.audio, input: { prompt: 'x', callBackUrl: 'http://127.0.0.1:9/hook' }, async: true });

  it('names the setting that allows it in demo mode (development), and not otherwise', async () => {
    const demo = await createTestStack({ env: { SWITCHYARD_DEMO: 'yes' }, noWorkers: true });
    const deployed = await createTestStack({ noWorkers: true });
    try {
      const inDemo = await ask(demo, await demo.seed());
      expect(inDemo.status).toBe(400);
      expect(inDemo.body.error.message).toBe('Invalid callBackUrl: points to a private or loopback address (127.0.0.1); CALLBACK_ALLOW_PRIVATE=true allows private addresses (development only)');
      const elsewhere = await ask(deployed, await deployed.seed());
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.body.error.message).toBe('Invalid callBackUrl: points to a private or loopback address (127.0.0.1)');
    } finally {
      await Promise.all([demo.close(), deployed.close()]);
    }
  });

  it('is accepted with CALLBACK_ALLOW_PRIVATE=1, as with true', async () => {
    const s = await createTestStack({ env: { CALLBACK_ALLOW_PRIVATE: '1' }, noWorkers: true });
    try {
      expect((await ask(s, await s.seed())).status).toBe(202);
    } finally {
      await s.close();
    }
  });
});

describe('callbacks end to end (CALLBACK_ALLOW_PRIVATE=true, a local receiver)', () => {
  let s: TestStack;
  let org: StackOrg;
  let receiver: Server;
  let hook: string;
  const received: Received[] = [];
  let failNext = 0;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, raw: Buffer.concat(chunks), path: req.url ?? '' });
        if (failNext > 0) {
          failNext--;
          res.writeHead(500).end('try later');
        } else res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    s = await createTestStack({ env: { CALLBACK_ALLOW_PRIVATE: 'true', CALLBACK_BACKOFF_MS: '50', SYNC_WAIT_MS: '3000', MEDIA_POLL_MS: '30', MEDIA_POLL_MAX_MS: '80' } });
    org = await s.seed();
  });
  afterEach(() => s.fake.setKnobs({}));
  afterAll(async () => {
    await s.close();
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  });

  async function deliveries(path: string, count: number, timeoutMs = 8000): Promise<Received[]> {
    const got = () => received.filter((r) => r.path === path);
    return waitUntil(async () => (got().length >= count ? got() : undefined), timeoutMs).catch(() => {
      throw new Error(`expected ${count} deliveries to ${path}, got ${got().length}`);
    });
  }
  /** The generation's callback job has ended: no delivery can come after it. */
  const deliveryEnded = (generationId: string) =>
    waitFor('the callback job to end', async () => ['completed', 'failed'].includes(await s.ctx.queues[QUEUES.callbacks].getJobState(callbackJobId(generationId))));

  it('POSTs the media record, signed with the organization secret, when the generation completes', async () => {
    const r = await request(s.app).post('/v1/media').set(org.auth).send({ model: STACK_MODELS.audio, input: { prompt: 'x', callBackUrl: `${hook}/done` }, async: true });
    expect(r.status).toBe(202);
    const [d] = await deliveries('/done', 1);
    expect(d.headers['content-type']).toBe('application/json');
    expect(d.headers['x-switchyard-event']).toBe('media.generation.completed');
    expect(verifySignature(d.raw, d.headers['x-switchyard-signature'] as string, org.callbackSecret)).toBe(true);
    expect(verifySignature(d.raw, d.headers['x-switchyard-signature'] as string, 'another secret')).toBe(false);
    const record = JSON.parse(d.raw.toString('utf8'));
    const polled = await request(s.app).get(`/v1/media/${r.body.id}`).set(org.auth);
    expect(record).toEqual(polled.body);
    expect(record).toMatchObject({ id: r.body.id, object: 'media.generation', status: 'completed' });
  });

  it('carries Standard Webhooks headers that the standardwebhooks library verifies with the org create webhookSecret', async () => {
    const from = Math.floor(Date.now() / 1000);
    const r = await request(s.app).post('/v1/media').set(org.auth).send({ model: STACK_MODELS.audio, input: { prompt: 'x', callBackUrl: `${hook}/standard` }, async: true });
    const [d] = await deliveries('/standard', 1);
    const to = Math.ceil(Date.now() / 1000);
    const headers = webhookHeaders(d.headers);
    expect(headers['webhook-id']).toBe(`cb-${r.body.id}`);
    // Stamped when it was sent: between the request and its delivery.
    expect(Number(headers['webhook-timestamp'])).toBeGreaterThanOrEqual(from);
    expect(Number(headers['webhook-timestamp'])).toBeLessThanOrEqual(to);
    expect(org.webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(org.webhookSecret).verify(d.raw.toString('utf8'), headers)).toMatchObject({ id: r.body.id, status: 'completed' });
    expect(() => new Webhook(`whsec_${Buffer.from('another key').toString('base64')}`).verify(d.raw.toString('utf8'), headers)).toThrow(/signature/i);
    // Derived from the callback secret as docs/callbacks.md shows an organization created before it, and not the
    // callback secret itself: a v1 signature never doubles as an X-Switchyard-Signature.
    expect(org.webhookSecret).toBe(`whsec_${createHmac('sha256', org.callbackSecret).update('switchyard standard webhooks key').digest('base64')}`);
  });

  it('a captured delivery replayed later, or with a fresh timestamp, fails verification', async () => {
    await request(s.app).post('/v1/media').set(org.auth).send({ model: STACK_MODELS.audio, input: { prompt: 'x', callBackUrl: `${hook}/replayed` }, async: true });
    const [d] = await deliveries('/replayed', 1);
    const body = d.raw.toString('utf8');
    const headers = webhookHeaders(d.headers);
    const wh = new Webhook(org.webhookSecret);
    expect(() => wh.verify(body, headers)).not.toThrow();
    // Replayed as captured ten minutes later: the library refuses a timestamp older than 5 minutes.
    const sent = Number(headers['webhook-timestamp']) * 1000;
    const later = jest.spyOn(Date, 'now').mockReturnValue(sent + 10 * 60_000);
    try {
      expect(() => wh.verify(body, headers)).toThrow(/too old/i);
    } finally {
      later.mockRestore();
    }
    // The timestamp is signed: a replay that freshens it no longer matches the signature.
    expect(() => wh.verify(body, { ...headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) + 1) })).toThrow(/signature/i);
  });

  it('retries a failing receiver with back-off until it answers 2xx, sending the same signed body', async () => {
    failNext = 2;
    const r = await request(s.app).post('/v1/media').set(org.auth).send({ model: STACK_MODELS.audio, input: { prompt: 'x', callBackUrl: `${hook}/flaky` } });
    const got = await deliveries('/flaky', 3);
    expect(new Set(got.map((g) => g.raw.toString())).size).toBe(1);
    for (const g of got) expect(verifySignature(g.raw, g.headers['x-switchyard-signature'] as string, org.callbackSecret)).toBe(true);
    // One delivery, one webhook-id; each attempt carries its own timestamp and a signature that verifies.
    expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    for (const g of got) expect(() => new Webhook(org.webhookSecret).verify(g.raw.toString('utf8'), webhookHeaders(g.headers))).not.toThrow();
    await deliveryEnded(r.body.id);
    expect(received.filter((x) => x.path === '/flaky')).toHaveLength(3);
  });

  it('announces a failed generation as media.generation.failed with the error in the record', async () => {
    s.fake.setKnobs({ replicateFail: true });
    await request(s.app).post('/v1/media').set(org.auth).send({ model: STACK_MODELS.video, input: { prompt: 'x', callBackUrl: `${hook}/failed` } });
    const [d] = await deliveries('/failed', 1);
    expect(d.headers['x-switchyard-event']).toBe('media.generation.failed');
    const record = JSON.parse(d.raw.toString());
    expect(record.status).toBe('failed');
    expect(record.error.metadata.provider_name).toBe('replicate');
    expect(record.error.trace_id).toBeUndefined();
  });

  it('announces a cancelled generation as media.generation.cancelled', async () => {
    s.fake.setKnobs({ replicateSteps: 1000 });
    const r = await request(s.app).post('/v1/media').set(org.auth).send({ model: STACK_MODELS.video, input: { prompt: 'x', callBackUrl: `${hook}/cancelled` }, async: true });
    expect((await request(s.app).post(`/v1/media/${r.body.id}/cancel`).set(org.auth)).status).toBe(200);
    const [d] = await deliveries('/cancelled', 1);
    expect(d.headers['x-switchyard-event']).toBe('media.generation.cancelled');
    expect(JSON.parse(d.raw.toString())).toMatchObject({ id: r.body.id, status: 'cancelled' });
    await deliveryEnded(r.body.id);
    expect(received.filter((x) => x.path === '/cancelled')).toHaveLength(1);
  });

  /** A media generation recorded (reserved) with a callback, and no job: what a worker that died leaves behind. */
  async function recorded(path: string): Promise<string> {
    const id = newId('gen');
    await s.ctx.generations.create({
      id,
      organizationId: org.organizationId,
      apiKeyId: null,
      userId: null,
      model: STACK_MODELS.video,
      unifiedModelId: STACK_MODELS.video,
      requestType: 'video',
      apiType: 'media',
      responseMode: 'async',
      request: { input: { prompt: 'x' } },
      routing: { queue: 'media', candidates: [`${STACK_MODELS.video}:replicate`] },
      callBackUrl: `${hook}${path}`,
      bound: '1',
    });
    return id;
  }

  it('a re-run that finds its generation ended (its worker died before queueing the callback) queues it', async () => {
    const id = await recorded('/rerun');
    await s.ctx.ledger.close(closeRowOf(id, { status: 'failed', error: { code: 'BAD_GATEWAY', message: 'the provider failed' } }));
    const executor = new MediaExecutor(s.workerDeps, s.workerDeps.config.media, new CallbackService(s.ctx.queues.callbacks, { backoffMs: 50 }));
    const job = { data: { generationId: id, organizationId: org.organizationId, callBackUrl: `${hook}/rerun`, kind: 'video', candidates: [], warnings: [] }, attemptsMade: 0, opts: {} };
    await executor.run(job as unknown as Job<MediaJobData>);
    const [d] = await deliveries('/rerun', 1);
    expect(d.headers['x-switchyard-event']).toBe('media.generation.failed');
    expect(JSON.parse(d.raw.toString())).toMatchObject({ id, status: 'failed' });
  });

  it('announces a generation the reaper ends (no job will finish it) as media.generation.failed', async () => {
    const id = await recorded('/reaped');
    const reap = stuckGenerationReaper(s.workerDeps, { everyMs: 60_000, minAgeMs: 0 }, new CallbackService(s.ctx.queues.callbacks, { backoffMs: 50 }));
    expect((await reap()).reaped).toBeGreaterThanOrEqual(1);
    const [d] = await deliveries('/reaped', 1);
    expect(d.headers['x-switchyard-event']).toBe('media.generation.failed');
    expect(JSON.parse(d.raw.toString())).toMatchObject({ id, status: 'failed', error: { code: 'SERVICE_UNAVAILABLE' } });
  });

  it('refuses, at delivery, an address that became private when private addresses are not allowed (no retry)', async () => {
    const deps = { ...s.workerDeps, config: { ...s.workerDeps.config, callbackAllowPrivate: false } };
    const g = await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId, status: 'completed' } });
    const job = { data: { generationId: g.id, organizationId: org.organizationId, url: `${hook}/never`, status: 'completed' }, updateData: async () => undefined } as unknown as Job<CallbackJobData>;
    await expect(callbackProcessor(deps)(job)).rejects.toBeInstanceOf(UnrecoverableError);
    expect(received.filter((x) => x.path === '/never')).toHaveLength(0);
  });
});

describe('callback URLs checked at request time (private addresses not allowed)', () => {
  let s: TestStack;
  let org: StackOrg;
  beforeAll(async () => {
    s = await createTestStack({ noWorkers: true });
    org = await s.seed();
  });
  afterAll(() => s.close());

  it.each(['http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://[::1]/hook', 'http://169.254.169.254/', 'http://10.0.0.1/x', 'ftp://example.com/x', 'hook', 'http://[64:ff9b:1::7f00:1]/', 'http://[::ffff:0:7f00:1]/'])(
    'answers 400 for %s, before anything is reserved',
    async (url) => {
      const r = await request(s.app).post('/v1/media').set(org.auth).send({ model: STACK_MODELS.video, input: { prompt: 'x', callBackUrl: url } });
      expect(r.status).toBe(400);
      expect(r.body.error.details.errors[0].path).toBe('/input/callBackUrl');
      expect(await s.t.db.generation.count()).toBe(0);
    },
  );
});
