import fs from 'node:fs';
import path from 'node:path';

/**
 * The floors of the code (docs/architecture.md "Floors of the code"), read from the sources' imports: api/ and workers/
 * never import each other; the folders of shared/ import each other one way only; no two files import each other (types
 * included); no module-level WeakSet records what was done to an object; no production module imports test code; no
 * production file is over 400 lines; routes and the composition root call services, never Prisma.
 */
const ROOT = path.resolve(__dirname, '../..');
const PRODUCTION = ['api', 'workers', 'shared', 'bin', 'fakes'];
const MAX_LINES = 400;

interface Source {
  file: string;
  text: string;
  lines: number;
  /** Every file it imports (types included), and those it needs at run time. */
  imports: string[];
  runtime: string[];
}

function sources(): Source[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'generated' && e.name !== 'node_modules') walk(p);
      } else if (p.endsWith('.ts')) files.push(p);
    }
  };
  for (const d of PRODUCTION) walk(path.join(ROOT, d));
  const resolve = (from: string, spec: string): string | null => {
    const base = path.resolve(path.dirname(from), spec.replace(/\.js$/, ''));
    for (const c of [`${base}.ts`, path.join(base, 'index.ts')]) if (fs.existsSync(c)) return path.relative(ROOT, c);
    return null;
  };
  return files.map((f) => {
    const text = fs.readFileSync(f, 'utf8');
    const imports: string[] = [];
    const runtime: string[] = [];
    for (const m of text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+'(\.[^']+)'/gms)) {
      const to = resolve(f, m[3]!);
      if (!to) continue;
      imports.push(to);
      if (!m[2]) runtime.push(to);
    }
    for (const m of text.matchAll(/(?<!typeof )(?:require|import)\('(\.[^']+)'\)/g)) {
      const to = resolve(f, m[1]!);
      if (to) imports.push(to), runtime.push(to);
    }
    return { file: path.relative(ROOT, f), text, lines: text.split('\n').length, imports, runtime };
  });
}

/** A floor: the folder under shared/ (`shared` for its own files), else the top-level folder. */
const floorOf = (file: string) => {
  const parts = file.split('/');
  return parts[0] === 'shared' ? (parts.length > 2 ? `shared/${parts[1]}` : 'shared') : parts[0]!;
};

/** The cycles of a directed graph (strongly connected components of more than one node). */
function cycles(edges: Map<string, Set<string>>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) found.push(c.sort());
    }
  };
  for (const v of edges.keys()) if (!idx.has(v)) visit(v);
  return found;
}

describe('the floors of the code', () => {
  const all = sources();

  it('api/ and workers/ never import each other, and no production module imports test code', () => {
    const crossing = all.flatMap((s) =>
      s.imports
        .filter((to) => (floorOf(s.file) === 'api' && floorOf(to) === 'workers') || (floorOf(s.file) === 'workers' && floorOf(to) === 'api') || to.startsWith('test/'))
        .map((to) => `${s.file} -> ${to}`),
    );
    expect(crossing).toEqual([]);
  });

  it('the folders of shared/ import each other one way only', () => {
    const edges = new Map<string, Set<string>>();
    for (const s of all.filter((x) => x.file.startsWith('shared/'))) {
      for (const to of s.imports.filter((t) => t.startsWith('shared/'))) {
        const [a, b] = [floorOf(s.file), floorOf(to)];
        if (a !== b) edges.set(a, (edges.get(a) ?? new Set()).add(b));
      }
    }
    expect(edges.size).toBeGreaterThan(5); // the scan sees the imports
    expect(cycles(edges)).toEqual([]);
  });

  it('no two files import each other, type-only imports included', () => {
    // A type-only circle is a floor missing too: the shared type belongs below both files.
    const edges = new Map(all.map((s) => [s.file, new Set(s.imports)]));
    expect(cycles(edges)).toEqual([]);
  });

  it('no module keeps a record of what it did to objects it is handed', () => {
    // A module-level WeakSet ("this client has its scripts", "this socket is patched") is state shared by every owner
    // of such objects in the process: the object, or the one that owns it, keeps it (docs/architecture.md).
    const found = all.filter((s) => !s.file.startsWith('fakes/')).flatMap((s) => [...s.text.matchAll(/^(?:export )?(?:const|let) (\w+)\b[^=\n]*= new WeakSet\b/gm)].map((m) => `${s.file}: ${m[1]}`));
    expect(found).toEqual([]);
  });

  it('routes and the composition root call services, not Prisma', () => {
    // A text check: the generated client imported (types too), or the database handle used (`ctx.db.generation...`;
    // a route does not even hold it). The composition root hands `deps.db` to services, and queries nothing itself.
    const generated = /from\s+'[^']*\/db\/generated\//;
    const offending = all.flatMap((s) => {
      const route = s.file.startsWith('api/routes/');
      if (!route && s.file !== 'api/app-context.ts') return [];
      const uses = (route ? /\.db\b/ : /\.db\./).exec(s.text);
      return [...(generated.test(s.text) ? [`${s.file} imports the generated Prisma client`] : []), ...(uses ? [`${s.file} uses ${uses[0]}`] : [])];
    });
    expect(all.filter((s) => s.file.startsWith('api/routes/')).length).toBeGreaterThan(10); // the scan sees the routes
    expect(offending).toEqual([]);
  });

  it(`no production file is over ${MAX_LINES} lines`, () => {
    expect(all.filter((s) => s.lines > MAX_LINES).map((s) => `${s.file}: ${s.lines}`)).toEqual([]);
  });

  it('docs/architecture.md is a map, not a history: at most 300 lines, the synchronous path in at most 20 concepts', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
    expect(doc.split('\n').filter((l, i, a) => i < a.length - 1 || l !== '').length).toBeLessThanOrEqual(300);
    const concepts = /### The synchronous path in \w+ concepts\n\n([\s\S]*?)\n\n/.exec(doc)?.[1] ?? '';
    const numbered = [...concepts.matchAll(/(?:^|\s)(\d+)\. /g)].map((m) => Number(m[1]));
    expect(numbered.length).toBeGreaterThan(0);
    expect(numbered).toEqual(numbered.map((_, i) => i + 1));
    expect(numbered.length).toBeLessThanOrEqual(20);
  });
});
