/**
 * Callbacks (decisions.md section 5): when a generation with a `callBackUrl` ends, its media record is POSTed
 * there as JSON, signed with the organization's callback secret:
 *
 *   X-Switchyard-Signature: sha256=<hex HMAC-SHA256 of the exact body bytes>
 *   X-Switchyard-Event: media.generation.<status>
 *
 * and with the Standard Webhooks headers (https://www.standardwebhooks.com/), so receivers can verify with the
 * `standardwebhooks` libraries and refuse replays (a timestamp older than 5 minutes):
 *
 *   webhook-id: cb-<generation id>                        (the delivery: the same on every retry)
 *   webhook-timestamp: <Unix seconds of this attempt>
 *   webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" with the organization's webhook key>
 *
 * Deliveries run on the `callbacks` queue (non-2xx and network errors retried with exponential back-off, at
 * most 8 attempts). URLs that resolve to private, loopback, link-local or unique-local addresses are refused
 * unless CALLBACK_ALLOW_PRIVATE=true, both when the request names the URL and again at delivery, where the
 * connection uses the checked addresses only (a DNS answer that changes in between cannot slip through).
 */
import { createHmac } from 'node:crypto';
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Queue } from 'bullmq';
import { JOB_OPTIONS } from '../queue/job-catalog';
import type { CallbackJobData } from '../queue/job-catalog';

export const SIGNATURE_HEADER = 'X-Switchyard-Signature';
export const EVENT_HEADER = 'X-Switchyard-Event';

/** `sha256=<hex>`: HMAC-SHA256 of the exact body with the organization's callback secret. */
export function signCallback(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * The organization's Standard Webhooks key, derived from its callback secret: every organization has one, those
 * created before it too, with no column to keep in step. A key of its own (not the callback secret's bytes), so a
 * `v1` signature over "{id}.{timestamp}.{body}" can never pass as the X-Switchyard-Signature of another body.
 */
export function webhookKey(callbackSecret: string): Buffer {
  return createHmac('sha256', callbackSecret).update('switchyard standard webhooks key').digest();
}

/** `whsec_<base64 key>`: the form the `standardwebhooks` libraries take (printed as `webhookSecret` by `org create`). */
export function webhookSecret(callbackSecret: string): string {
  return `whsec_${webhookKey(callbackSecret).toString('base64')}`;
}

/** `v1,<base64>`: HMAC-SHA256 of "{id}.{timestamp}.{body}" (Standard Webhooks, symmetric signature). */
export function signWebhook(key: Buffer, id: string, timestamp: number, body: string | Buffer): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

/** The callback job of a generation, and the `webhook-id` of its delivery: one per generation ending. */
export function callbackJobId(generationId: string): string {
  return `cb-${generationId}`;
}

export function callbackEvent(status: CallbackJobData['status']): string {
  return `media.generation.${status}`;
}

// ---------- private-address guard ----------

const PRIVATE_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];
/**
 * IPv6 (IANA IPv6 special-purpose address registry). Only global unicast (2000::/3) is let through, minus the
 * special ranges inside it below; the addresses that carry an IPv4 address (mapped, SIIT, NAT64, 6to4) are judged
 * by that IPv4 address (embeddedV4). Everything outside 2000::/3 is loopback, unspecified, link-local, unique-local,
 * multicast, discard, local-use NAT64 or unassigned.
 */
const PRIVATE_V6: Array<[string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated)
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): translates into whatever the local network chose
  ['100::', 64], // discard
  ['100:0:0:1::', 64], // dummy prefix (RFC 9780)
  ['2001::', 23], // IETF protocol assignments: Teredo 2001::/32 (tunnels to an embedded IPv4), benchmarking, ORCHID, ...
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
  ['5f00::', 16], // SRv6 SIDs (RFC 9602)
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];
const GLOBAL_UNICAST_V6: [string, number] = ['2000::', 3];

function blockList(): net.BlockList {
  const list = new net.BlockList();
  for (const [a, p] of PRIVATE_V4) list.addSubnet(a, p, 'ipv4');
  for (const [a, p] of PRIVATE_V6) list.addSubnet(a, p, 'ipv6');
  return list;
}
const BLOCKED = blockList();
const GLOBAL_UNICAST = new net.BlockList();
GLOBAL_UNICAST.addSubnet(GLOBAL_UNICAST_V6[0], GLOBAL_UNICAST_V6[1], 'ipv6');

/** An IPv6 address as 8 16-bit groups (accepts `::` and a trailing dotted quad). */
function ipv6Groups(ip: string): number[] | undefined {
  let text = ip.toLowerCase().split('%')[0];
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const b = quad[1].split('.').map(Number);
    text = text.slice(0, -quad[1].length) + `${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const part = (s: string | undefined) => (s ? s.split(':').map((h) => parseInt(h, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const groups = text.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill(0), ...t] : h;
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * The IPv4 address an IPv6 address carries: mapped (`::ffff:a.b.c.d`, ::ffff:0:0/96), SIIT IPv4-translated
 * (`::ffff:0:a.b.c.d`, ::ffff:0:0:0/96), NAT64 well-known prefix (`64:ff9b::/96`) or 6to4 (`2002::/16`).
 */
function embeddedV4(groups: number[]): string | undefined {
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zero(0, 5) && groups[5] === 0xffff) return v4(groups[6], groups[7]);
  if (zero(0, 4) && groups[4] === 0xffff && groups[5] === 0) return v4(groups[6], groups[7]);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6)) return v4(groups[6], groups[7]);
  if (groups[0] === 0x2002) return v4(groups[1], groups[2]);
  return undefined;
}

/** True for loopback, private, link-local, unique-local, multicast and other non-public addresses (v4 and v6). */
export function isPrivateAddress(ip: string): boolean {
  const family = net.isIP(ip);
  if (family === 4) return BLOCKED.check(ip, 'ipv4');
  if (family !== 6) return true; // not an address at all: refuse
  const groups = ipv6Groups(ip);
  if (!groups) return true;
  const inner = embeddedV4(groups);
  if (inner !== undefined) return BLOCKED.check(inner, 'ipv4');
  const plain = groups.map((g) => g.toString(16)).join(':');
  return !GLOBAL_UNICAST.check(plain, 'ipv6') || BLOCKED.check(plain, 'ipv6');
}

export class CallbackUrlError extends Error {
  override readonly name = 'CallbackUrlError';
}

/** The host did not resolve: refused when a request names it, retried at delivery (DNS may fail for a while). */
export class CallbackHostUnresolved extends CallbackUrlError {}

/** The URL reaches a private or loopback address: what CALLBACK_ALLOW_PRIVATE lifts. */
export class CallbackAddressPrivate extends CallbackUrlError {}

export type HostLookup = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemLookup: HostLookup = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

/**
 * Checks a callback URL: absolute http(s), and (unless `allowPrivate`) every address its host resolves to is
 * public. Throws CallbackUrlError saying why.
 */
export async function checkCallbackUrl(raw: string, opts: { allowPrivate: boolean; lookup?: HostLookup }): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CallbackUrlError('is not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CallbackUrlError(`must use http or https, not ${url.protocol.replace(':', '')}`);
  if (!url.hostname) throw new CallbackUrlError('has no host');
  if (opts.allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) {
    if (isPrivateAddress(host)) throw new CallbackAddressPrivate(`points to a private or loopback address (${host})`);
    return url;
  }
  let addresses: Array<{ address: string }>;
  try {
    addresses = await (opts.lookup ?? systemLookup)(host);
  } catch {
    throw new CallbackHostUnresolved(`host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw new CallbackHostUnresolved(`host ${host} does not resolve`);
  const bad = addresses.find((a) => isPrivateAddress(a.address));
  if (bad) throw new CallbackAddressPrivate(`host ${host} resolves to a private or loopback address (${bad.address})`);
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/** A `lookup` for the connection itself that refuses private answers (closes the DNS-rebinding gap). */
function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const bad = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
      if (bad) return callback(Object.assign(new Error(`callback host ${hostname} resolves to a private address (${bad.address})`), { code: 'ECALLBACKPRIVATE' }), []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

export interface CallbackDelivery {
  url: string;
  body: string;
  /** The organization's callback secret (both signatures derive from it). */
  secret: string;
  status: CallbackJobData['status'];
  /** `webhook-id`: the same on every attempt of one delivery. */
  id: string;
  /** This attempt's time (`webhook-timestamp`). */
  sentAt: Date;
}

/**
 * POSTs one signed callback; resolves with the receiver's HTTP status (any status), rejects on network errors and
 * when the whole exchange (connection, reply, its body) takes more than `timeoutMs` (10 s): a receiver trickling
 * bytes holds no delivery slot longer.
 */
export async function postCallback(d: CallbackDelivery, opts: { allowPrivate: boolean; timeoutMs?: number }): Promise<number> {
  const url = await checkCallbackUrl(d.url, { allowPrivate: opts.allowPrivate });
  const body = Buffer.from(d.body, 'utf8');
  const client = url.protocol === 'https:' ? https : http;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const timestamp = Math.floor(d.sentAt.getTime() / 1000);
  return new Promise<number>((resolve, reject) => {
    const req = client.request(
      url,
      {
        method: 'POST',
        lookup: guardedLookup(opts.allowPrivate) as unknown as net.LookupFunction,
        timeout: timeoutMs,
        headers: {
          'content-type': 'application/json',
          'content-length': String(body.length),
          'user-agent': 'Switchyard-Callbacks/1.0',
          [SIGNATURE_HEADER]: signCallback(d.secret, body),
          [EVENT_HEADER]: callbackEvent(d.status),
          'webhook-id': d.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(webhookKey(d.secret), d.id, timestamp, body),
        },
      },
      (res) => {
        res.resume(); // the receiver's body is not needed
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    const deadline = setTimeout(() => req.destroy(new Error(`callback receiver did not answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('close', () => clearTimeout(deadline));
    req.on('timeout', () => req.destroy(new Error('callback receiver did not answer in time')));
    req.on('error', reject);
    req.end(body);
  });
}

/** Puts a delivery on the `callbacks` queue: one per generation ending (the job id dedupes). */
export class CallbackService {
  constructor(
    private readonly queue: Queue,
    private readonly opts: { backoffMs?: number } = {},
  ) {}

  async enqueue(data: CallbackJobData): Promise<void> {
    const options = { ...JOB_OPTIONS.callbacks, jobId: callbackJobId(data.generationId) };
    if (this.opts.backoffMs !== undefined) options.backoff = { type: 'exponential', delay: this.opts.backoffMs };
    await this.queue.add('callback', data, options);
  }
}
