import fs from 'node:fs';
import path from 'node:path';

/**
 * Tests wait for events, not for the clock (test/helpers/until.ts): a condition is polled with `waitUntil` / `waitFor`;
 * `pause` is the one fixed wait, for a window in which something must not happen or for pacing, each call commented
 * with why, at most MAX_PAUSES in test/; no test sleeps otherwise, and none asserts on elapsed wall-clock time
 * (timings live in bench/).
 */
const TEST = path.resolve(__dirname, '..');
const UNTIL = path.join(TEST, 'helpers', 'until.ts');
const MAX_PAUSES = 40;

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p) : p.endsWith('.ts') && p !== __filename ? [p] : [];
  });
}

const sources = files(TEST).map((file) => ({ file: path.relative(TEST, file), lines: fs.readFileSync(file, 'utf8').split('\n'), own: file === UNTIL }));
const where = (s: { file: string }, i: number) => `${s.file}:${i + 1}`;
/** A call of until.ts's pause (not a queue's `.pause()`, not its definition). */
const isPause = (l: string) => /(?<![.\w])pause\(/.test(l) && !/function pause/.test(l);

describe('how the tests wait', () => {
  it('sleep only through pause(), each call saying why', () => {
    // A promise that a timer resolves, or a sleep helper: a wait for the clock outside until.ts.
    const sleeps = /\bsleep\s*\(|new Promise\s*(<[^>]*>)?\(\s*\(?\s*(\w+)\s*\)?\s*=>\s*\(?\s*(\w+\s*=\s*)?setTimeout\(\s*\2\s*,/;
    const raw = sources.filter((s) => !s.own).flatMap((s) => s.lines.flatMap((l, i) => (sleeps.test(l) ? [where(s, i)] : [])));
    expect(raw).toEqual([]);
    const silent = sources.flatMap((s) =>
      s.lines.flatMap((l, i) => (isPause(l) && !s.lines.slice(Math.max(0, i - 3), i + 1).some((c) => c.includes('//')) ? [where(s, i)] : [])),
    );
    expect(silent).toEqual([]);
  });

  it(`pause at most ${MAX_PAUSES} times`, () => {
    const pauses = sources.flatMap((s) => s.lines.flatMap((l, i) => (isPause(l) ? [where(s, i)] : [])));
    expect(pauses.length).toBeGreaterThan(0); // the scan sees them
    expect(pauses.length).toBeLessThanOrEqual(MAX_PAUSES);
  });

  it('assert on no elapsed wall-clock time', () => {
    // The clock read, or a moment recorded (t0, started, …At), less another, bounded: an elapsed time (Jest's clock,
    // exact, is no wall clock).
    const clock = /expect\([^;]*(Date\.now\(\)|performance\.now\(\))[^;]*\)\.toBe(Less|Greater)Than/;
    const moments = /expect\([^;]*(\bt\d\b|\bstarted\b|\.at\b|At\b|Ended\b)!?\s*-\s*[^;]*\)\.toBe(Less|Greater)Than/;
    expect(sources.flatMap((s) => s.lines.flatMap((l, i) => (clock.test(l) || moments.test(l) ? [where(s, i)] : [])))).toEqual([]);
  });
});
