/**
 * Summarises a V8 CPU profile (`node --cpu-prof`): self time by function and by package, as a share of the busy
 * (non-idle) samples, the first `--skip` seconds (start-up, first compiles) left out. Used for the profile tables of
 * bench/rounds/ (issue 12).
 *
 *   node dist/bench/profile-summary.js <file.cpuprofile> [--skip 4] [--top 30] [--requests N]
 *
 * With `--requests`, the busy time is also given per request (µs), to set against the harness's CPU per request.
 */
import { readFileSync } from 'node:fs';

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: Frame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const IDLE = new Set(['(idle)', '(program)']);

/** The package a frame belongs to: a node_modules package, Node's internals, V8, or Switchyard's own folder. */
export function packageOf(frame: Frame): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return 'node:internal';
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return `switchyard:${url.slice(dist + 6).split('/').slice(0, 2).join('/')}`;
  return url;
}

export function summarise(profile: Profile, skipSeconds: number): { busyUs: number; byFunction: Map<string, number>; byPackage: Map<string, number> } {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let t = profile.startTime;
  let busyUs = 0;
  const from = profile.startTime + skipSeconds * 1e6;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    if (t < from) continue;
    const frame = nodes.get(profile.samples[i]!)!.callFrame;
    if (IDLE.has(frame.functionName)) continue;
    busyUs += dt;
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(node_modules|dist)\//, '')}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + dt);
    const pkg = packageOf(frame);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + dt);
  }
  return { busyUs, byFunction, byPackage };
}

function main(argv: string[]): void {
  const file = argv[0];
  if (!file) throw new Error('usage: profile-summary <file.cpuprofile> [--skip 4] [--top 30] [--requests N]');
  const opt = (name: string, fallback: number) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? Number(argv[i + 1]) : fallback;
  };
  const { busyUs, byFunction, byPackage } = summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile, opt('skip', 4));
  const requests = opt('requests', 0);
  const share = (us: number) => ((100 * us) / busyUs).toFixed(1).padStart(5);
  const perRequest = (us: number) => (requests ? ` ${(us / requests).toFixed(0).padStart(5)} µs/req` : '');
  console.log(`busy ${(busyUs / 1e6).toFixed(2)} s${perRequest(busyUs)}\n\nby package (self %):`);
  for (const [pkg, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${share(us)}${perRequest(us)}  ${pkg}`);
  console.log('\nby function (self %):');
  for (const [fn, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, opt('top', 30))) console.log(`${share(us)}${perRequest(us)}  ${fn}`);
}

if (require.main === module) main(process.argv.slice(2));
