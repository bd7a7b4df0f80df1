import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

// npm's own range reader (a dependency of bullmq, hoisted): what decides its EBADENGINE warnings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const semver = require('semver') as { satisfies(version: string, range: string): boolean; minVersion(range: string): { version: string } };

describe("the README's EBADENGINE sentence", () => {
  it('names exactly the packages npm install warns about on the oldest Node the service runs on', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    const oldest = semver.minVersion(pkg.engines.node).version;
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { engines?: { node?: string } }> };
    const warned = new Set<string>();
    for (const [where, p] of Object.entries(lock.packages)) {
      if (!where || !p.engines?.node) continue;
      if (!semver.satisfies(oldest, p.engines.node)) warned.add(where.replace(/^.*node_modules\//, ''));
    }
    expect(warned.size).toBeGreaterThan(0);

    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').replace(/\n/g, ' ');
    const named = /warns \(EBADENGINE\) for (.*?), which declare/.exec(readme);
    expect(named).not.toBeNull();
    const names = [...named![1].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const covers = (name: string, p: string) => (name.endsWith('/*') ? p.startsWith(name.slice(0, -1)) : p === name);
    expect([...warned].filter((p) => !names.some((n) => covers(n, p)))).toEqual([]);
    expect(names.filter((n) => ![...warned].some((p) => covers(n, p)))).toEqual([]);
  });
});
