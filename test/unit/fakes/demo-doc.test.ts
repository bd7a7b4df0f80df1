import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..', '..');

describe('docs/demo.md', () => {
  it('documents every knob of the fake providers (FakeKnobs) and every control route', () => {
    const source = fs.readFileSync(path.join(ROOT, 'fakes', 'fake-knobs.ts'), 'utf8');
    const start = source.indexOf('export interface FakeKnobs {');
    const block = source.slice(start, source.indexOf('\n}\n', start));
    const knobs = [...block.matchAll(/^ {2}(\w+)\?:/gm)].map((m) => m[1]);
    expect(knobs.length).toBeGreaterThan(20);
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'demo.md'), 'utf8');
    const documented = new Set(doc.split('\n').filter((l) => l.startsWith('| `')).flatMap((l) => [...l.split('|')[1].matchAll(/`(\w+)`/g)].map((m) => m[1])));
    expect(knobs.filter((k) => !documented.has(k))).toEqual([]);
    for (const route of ['GET /_fake/knobs', 'POST /_fake/knobs', 'POST /_fake/reset', 'GET /_fake/requests', 'GET /_fake/aborted', 'GET /_fake/batches']) expect(doc).toContain(route);
  });
});
