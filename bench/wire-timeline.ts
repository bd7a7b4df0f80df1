/**
 * Where one request's time goes, read off the wire (issue 12; bench/rounds/10-wire-timeline.md). Reads a loopback
 * capture taken while the side-by-side harness drives Switchyard at concurrency 1, and prints, from the moment each
 * request reaches the gateway, when the gateway's PostgreSQL, Redis and upstream messages leave and their answers come
 * back, and when the reply leaves (medians and p90 over the requests). No change to the service: the kernel's
 * timestamps.
 *
 *   tcpdump -i lo -nn -w /tmp/c1.pcap 'tcp port 3977 or tcp port 5432 or tcp port 6379 or tcp port 18000' &
 *   SKIP_PORTKEY=1 CONCURRENCY=1 STREAM=0 bash bench/side-by-side.sh; kill %1
 *   node dist/bench/wire-timeline.js /tmp/c1.pcap [--gateway 3977] [--upstream 18000] [--pg 5432] [--redis 6379]
 *
 * Concurrency 1 only: a request is the span from a client's packet to the gateway until the gateway's first packet
 * back (for a stream, its first byte); spans in which another connection sent a request too (the harness's warm-up
 * at 32), and spans with no upstream call (readiness probes, reads), are left out. Needs tcpdump to read the capture.
 */
import { execFileSync } from 'node:child_process';
import { percentiles } from './http-load';

interface Packet {
  t: number;
  srcPort: number;
  dstPort: number;
}

/** `tcpdump -nn -tt` lines with a payload, as (time, source port, destination port). */
export function parseTcpdump(text: string): Packet[] {
  const out: Packet[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+\.\d+) IP6? \S+?\.(\d+) > \S+?\.(\d+): .*?, length (\d+)/.exec(line);
    if (m && Number(m[4]) > 0) out.push({ t: Number(m[1]) * 1000, srcPort: Number(m[2]), dstPort: Number(m[3]) });
  }
  return out;
}

export interface Ports {
  gateway: number;
  upstream: number;
  pg: number;
  redis: number;
}

/** Each request's events, in ms from its first packet: the first exchange with each service, the last Redis one, the reply. */
export function timelines(packets: Packet[], ports: Ports): Array<Record<string, number>> {
  const out: Array<Record<string, number>> = [];
  let cur: { start: number; client: number; overlapped?: true; ev: Record<string, number>; firstRedis?: number; lastRedis?: { port: number; t: number } } | undefined;
  const first = (name: string, t: number) => {
    if (cur && cur.ev[name] === undefined) cur.ev[name] = t - cur.start;
  };
  for (const p of packets) {
    if (p.dstPort === ports.gateway) {
      cur ??= { start: p.t, client: p.srcPort, ev: {} };
      // Another connection's request meanwhile (the harness's warm-up at 32): not a concurrency-1 request.
      if (p.srcPort !== cur.client) cur.overlapped = true;
      continue;
    }
    if (!cur) continue;
    if (p.srcPort === ports.gateway) {
      cur.ev.reply = p.t - cur.start;
      // A generation calls the provider: a span without an upstream call is a probe or a read, not one of the harness's requests.
      if (!cur.overlapped && cur.ev['upstream sent'] !== undefined) out.push(cur.ev);
      cur = undefined;
      continue;
    }
    if (p.dstPort === ports.pg) first('pg sent', p.t);
    else if (p.srcPort === ports.pg && cur.ev['pg sent'] !== undefined) first('pg answered', p.t);
    else if (p.dstPort === ports.upstream) first('upstream sent', p.t);
    else if (p.srcPort === ports.upstream && cur.ev['upstream sent'] !== undefined) first('upstream answered', p.t);
    else if (p.dstPort === ports.redis) {
      first('redis sent', p.t);
      cur.firstRedis ??= p.srcPort;
      cur.lastRedis = { port: p.srcPort, t: p.t };
    } else if (p.srcPort === ports.redis) {
      if (p.dstPort === cur.firstRedis) first('redis answered', p.t);
      if (cur.lastRedis?.port === p.dstPort) {
        cur.ev['last redis sent'] = cur.lastRedis.t - cur.start;
        cur.ev['last redis answered'] = p.t - cur.start;
      }
    }
  }
  return out;
}

/** The table: each event's median and p90, in the order of their medians. */
export function summarize(rows: Array<Record<string, number>>): string {
  const names = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const lines = names
    .map((n) => {
      const xs = rows.map((r) => r[n]).filter((x): x is number => x !== undefined);
      return { n, count: xs.length, ...percentiles(xs) };
    })
    .sort((a, b) => a.p50 - b.p50)
    .map((e) => `${e.n.padEnd(22)} ${e.p50.toFixed(3).padStart(7)} ${e.p90.toFixed(3).padStart(7)} ${String(e.count).padStart(7)}`);
  return [`${'event (ms from request)'.padEnd(22)} ${'p50'.padStart(7)} ${'p90'.padStart(7)} ${'seen'.padStart(7)}`, ...lines, `requests: ${rows.length}`].join('\n');
}

function main(argv: string[]): void {
  const file = argv.find((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
  if (!file) {
    console.error('usage: wire-timeline <capture.pcap> [--gateway 3977] [--upstream 18000] [--pg 5432] [--redis 6379]');
    process.exit(2);
  }
  const opt = (name: string, d: number) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? Number(argv[i + 1]) : d;
  };
  const ports = { gateway: opt('gateway', 3977), upstream: opt('upstream', 18000), pg: opt('pg', 5432), redis: opt('redis', 6379) };
  const text = execFileSync('tcpdump', ['-nn', '-tt', '-r', file], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
  console.log(summarize(timelines(parseTcpdump(text), ports)));
}

if (require.main === module) main(process.argv.slice(2));
