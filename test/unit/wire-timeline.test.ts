import { parseTcpdump, summarize, timelines } from '../../bench/wire-timeline';

const ports = { gateway: 3977, upstream: 18000, pg: 5432, redis: 6379 };
// One request at concurrency 1, as tcpdump -nn -tt prints it (a pure ACK, length 0, is ignored).
const capture = [
  '1000.000000 IP 127.0.0.1.54054 > 127.0.0.1.3977: Flags [P.], seq 1:293, ack 1, win 512, length 292',
  '1000.000100 IP 127.0.0.1.3977 > 127.0.0.1.54054: Flags [.], ack 293, win 512, length 0',
  '1000.000500 IP 127.0.0.1.57388 > 127.0.0.1.5432: Flags [P.], seq 1:1831, ack 1, win 512, length 1830',
  '1000.000520 IP 127.0.0.1.53690 > 127.0.0.1.6379: Flags [P.], seq 1:2201, ack 1, win 512, length 2200',
  '1000.001000 IP 127.0.0.1.6379 > 127.0.0.1.53702: Flags [P.], seq 1:5, ack 1, win 512, length 4',
  '1000.001350 IP 127.0.0.1.5432 > 127.0.0.1.57388: Flags [P.], seq 1:416, ack 1831, win 512, length 415',
  '1000.001460 IP 127.0.0.1.6379 > 127.0.0.1.53690: Flags [P.], seq 1:4, ack 2201, win 512, length 3',
  '1000.001900 IP 127.0.0.1.41596 > 127.0.0.1.18000: Flags [P.], seq 1:318, ack 1, win 512, length 317',
  '1000.002340 IP 127.0.0.1.18000 > 127.0.0.1.41596: Flags [P.], seq 1:501, ack 318, win 512, length 500',
  '1000.002560 IP 127.0.0.1.53690 > 127.0.0.1.6379: Flags [P.], seq 2201:2500, ack 4, win 512, length 299',
  '1000.002620 IP 127.0.0.1.6379 > 127.0.0.1.53690: Flags [P.], seq 4:8, ack 2500, win 512, length 4',
  '1000.002770 IP 127.0.0.1.3977 > 127.0.0.1.54054: Flags [P.], seq 1:897, ack 293, win 512, length 896',
  // After the reply, before the next request: not part of any request.
  '1000.003000 IP 127.0.0.1.57388 > 127.0.0.1.5432: Flags [P.], seq 1831:2000, ack 416, win 512, length 169',
].join('\n');

describe('wire timeline (bench/wire-timeline.ts)', () => {
  it('reads payload packets only', () => {
    expect(parseTcpdump(capture)).toHaveLength(12);
  });

  it('times each exchange from the request, pairing Redis answers with the connection that asked', () => {
    const [r, ...rest] = timelines(parseTcpdump(capture), ports);
    expect(rest).toHaveLength(0);
    const ms = Object.fromEntries(Object.entries(r!).map(([k, v]) => [k, Math.round(v * 1000) / 1000]));
    expect(ms).toEqual({
      'pg sent': 0.5,
      'redis sent': 0.52,
      'pg answered': 1.35,
      // Not the answer at 1.000 on another connection (a blocking read's), but the one on the asking connection.
      'redis answered': 1.46,
      'upstream sent': 1.9,
      'upstream answered': 2.34,
      'last redis sent': 2.56,
      'last redis answered': 2.62,
      reply: 2.77,
    });
  });

  it('summarizes in the order of the medians', () => {
    const lines = summarize(timelines(parseTcpdump(capture + '\n' + capture.replace(/^1000\./gm, '1001.')), ports)).split('\n');
    expect(lines[1]).toMatch(/^pg sent\s+0\.500\s+0\.500\s+2$/);
    expect(lines[lines.length - 2]).toMatch(/^reply\s+2\.770/);
    expect(lines[lines.length - 1]).toBe('requests: 2');
  });
});

describe('wire timeline at more than one connection', () => {
  it('leaves out a span in which another connection sent a request', () => {
    const other = '1000.000300 IP 127.0.0.1.54060 > 127.0.0.1.3977: Flags [P.], seq 1:293, ack 1, win 512, length 292';
    const lines = capture.split('\n');
    const overlapped = [...lines.slice(0, 2), other, ...lines.slice(2)].join('\n');
    expect(timelines(parseTcpdump(overlapped), ports)).toHaveLength(0);
  });
});

describe('wire timeline, what is not a generation', () => {
  it('leaves out a span without a PostgreSQL exchange (a probe), and reads the first length of a decoded line', () => {
    const probe = [
      '999.000000 IP 127.0.0.1.45926 > 127.0.0.1.3977: Flags [P.], seq 1:85, ack 1, win 64, length 84',
      '999.000100 IP 127.0.0.1.6379 > 127.0.0.1.38718: Flags [P.], seq 1:10, ack 1, win 64, length 9: RESP "length 3977"',
      '999.000200 IP 127.0.0.1.3977 > 127.0.0.1.45926: Flags [P.], seq 1:347, ack 85, win 64, length 346',
    ].join('\n');
    expect(parseTcpdump(probe).map((p) => p.dstPort)).toEqual([3977, 38718, 45926]);
    expect(timelines(parseTcpdump(probe + '\n' + capture), ports)).toHaveLength(1);
  });
});
