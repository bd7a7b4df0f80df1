import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { buildIfChanged } = require('../../scripts/build-if-changed.js') as {
  buildIfChanged(root: string, steps: { generate(): void; compile(): void; console?(): void }): string[];
};

const ROOT = path.join(__dirname, '..', '..');

/**
 * npm start's prestart (scripts/build-if-changed.js) on a checkout of its own: a tiny one with the same layout, whose
 * build steps are recorded instead of run.
 */
describe('npm start builds only what changed', () => {
  let root: string;
  let ran: string[];
  const steps = {
    generate: () => void ran.push('generate'),
    compile: () => {
      ran.push('compile');
      fs.mkdirSync(path.join(root, 'dist', 'bin'), { recursive: true });
      fs.writeFileSync(path.join(root, 'dist', 'bin', 'start.js'), '');
    },
  };
  const start = () => {
    ran = [];
    return buildIfChanged(root, steps);
  };
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-build-'));
    write('tsconfig.json', '{}');
    write('tsconfig.build.json', JSON.stringify({ include: ['api', 'shared'] }));
    write('package-lock.json', '{}');
    write('prisma/schema.prisma', 'model A { id Int @id }');
    write('api/main.ts', 'export {};');
    write('api/main.test.ts', 'test');
    write('shared/db/generated/client.ts', 'export {};');
    write('docs/notes.md', 'notes');
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('builds the console again when its sources change or its build is gone, and only then', () => {
    const withConsole = {
      ...steps,
      console: () => {
        ran.push('console');
        write('dist/console/index.html', '<!doctype html>');
      },
    };
    const startAll = () => {
      ran = [];
      return buildIfChanged(root, withConsole);
    };
    write('console/src/main.tsx', 'export {};');
    expect(startAll()).toEqual(['generate', 'compile', 'console']);
    expect(startAll()).toEqual([]);
    write('console/src/main.tsx', 'export const a = 1;');
    expect(startAll()).toEqual(['console']);
    write('api/main.ts', 'export const b = 2;');
    expect(startAll()).toEqual(['compile']);
    fs.rmSync(path.join(root, 'dist', 'console'), { recursive: true });
    expect(startAll()).toEqual(['console']);
    expect(startAll()).toEqual([]);
  });

  it('builds everything the first time, then nothing while nothing changed', () => {
    expect(start()).toEqual(['generate', 'compile']);
    expect(start()).toEqual([]);
    expect(start()).toEqual([]);
  });

  it('compiles again when a source changes, and generates the Prisma client again only when the schema changes', () => {
    start();
    write('api/main.ts', 'export const changed = 1;');
    expect(start()).toEqual(['compile']);
    write('prisma/schema.prisma', 'model A { id Int @id\n name String }');
    expect(start()).toEqual(['generate', 'compile']);
    write('api/new-route.ts', 'export {};');
    expect(start()).toEqual(['compile']);
    fs.rmSync(path.join(root, 'api', 'new-route.ts'));
    expect(start()).toEqual(['compile']);
    write('tsconfig.json', '{"compilerOptions":{}}');
    expect(start()).toEqual(['compile']);
    expect(start()).toEqual([]);
  });

  it('ignores what tsc does not compile (tests, docs) and a touch that leaves the text alone', () => {
    start();
    write('api/main.test.ts', 'another test');
    write('docs/notes.md', 'more notes');
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(root, 'api', 'main.ts'), later, later);
    expect(start()).toEqual([]);
  });

  it('builds again when dist/ is gone (the record of what it was built from goes with it), and after a failed build', () => {
    start();
    fs.rmSync(path.join(root, 'dist'), { recursive: true });
    expect(start()).toEqual(['generate', 'compile']);
    write('api/main.ts', 'export const broken = ;');
    expect(() =>
      buildIfChanged(root, {
        ...steps,
        compile: () => {
          throw new Error('tsc failed');
        },
      }),
    ).toThrow('tsc failed');
    expect(start()).toEqual(['compile']);
  });

  it('is what npm start and npm run db:migrate run first; npm run build still builds everything', () => {
    const scripts = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.prestart).toBe('node scripts/build-if-changed.js');
    expect(scripts['predb:migrate']).toBe('node scripts/build-if-changed.js');
    expect(scripts.build).toBe('node scripts/prisma-generate.js && tsc -p tsconfig.build.json && node scripts/build-console.js');
  });
});
