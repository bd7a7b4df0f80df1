#!/usr/bin/env node
'use strict';
// `npm start`'s prestart: builds dist/ only when what it is built from changed since the last build this script made.
// `npm run build` always builds (Prisma client, then tsc); here the Prisma client is generated again only when
// prisma/schema.prisma (or the installed Prisma) changed, and tsc runs only when a source it compiles, its
// configuration or the installed packages changed. Unchanged, it prints nothing and takes a few tens of milliseconds
// (the build took about 3 s and printed four lines of Prisma's).
//
// What was built from what is kept in dist/.build-inputs.json: content hashes, so a checkout or a `touch` that leaves
// the text alone does not rebuild, and an edit within the same second as the last build does.
const { spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const RECORD = path.join('dist', '.build-inputs.json');

function hashFiles(root, files) {
  const h = createHash('sha256');
  for (const f of files) {
    let content;
    try {
      content = fs.readFileSync(path.join(root, f));
    } catch {
      content = Buffer.from('(absent)');
    }
    h.update(`${f}\0${content.length}\0`).update(content);
  }
  return h.digest('hex');
}

/** The TypeScript sources tsconfig.build.json compiles (its `include`, minus tests), sorted. */
function sources(root) {
  const config = JSON.parse(fs.readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8'));
  const out = [];
  const walk = (rel) => {
    let st;
    try {
      st = fs.statSync(path.join(root, rel));
    } catch {
      return;
    }
    if (st.isDirectory()) {
      for (const name of fs.readdirSync(path.join(root, rel)).sort()) if (name !== 'node_modules' && name !== 'dist') walk(path.join(rel, name));
    } else if (rel.endsWith('.ts') && !rel.endsWith('.test.ts')) out.push(rel);
  };
  for (const entry of config.include ?? []) walk(entry);
  return out.sort();
}

/** What each step of the build is made from: `generate` (the Prisma client) and `compile` (tsc). */
function inputs(root) {
  const installed = (pkg) => path.join('node_modules', pkg, 'package.json');
  return {
    generate: hashFiles(root, ['prisma/schema.prisma', 'prisma.config.ts', installed('prisma'), installed('@prisma/client')]),
    // The generated client is among the sources: read after `generate` has run.
    compile: () => hashFiles(root, ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json', installed('typescript'), ...sources(root)]),
  };
}

/** The modules of shared/ that console/src imports (kept free of imports themselves). */
const CONSOLE_SHARED = ['shared/billing/periods.ts'];

/**
 * The console's sources (console/, scripts/build-console.js, the modules of shared/ it bundles: CONSOLE_SHARED) and the
 * installed bundler and UI library.
 */
function consoleInputs(root) {
  const files = [];
  const walk = (rel) => {
    let st;
    try {
      st = fs.statSync(path.join(root, rel));
    } catch {
      return;
    }
    if (st.isDirectory()) for (const name of fs.readdirSync(path.join(root, rel)).sort()) walk(path.join(rel, name));
    else files.push(rel);
  };
  walk('console');
  files.push(...CONSOLE_SHARED);
  return hashFiles(root, ['scripts/build-console.js', path.join('node_modules', 'esbuild', 'package.json'), path.join('node_modules', 'preact', 'package.json'), ...files]);
}

function readRecord(root) {
  try {
    return JSON.parse(fs.readFileSync(path.join(root, RECORD), 'utf8'));
  } catch {
    return {};
  }
}

/**
 * Runs the steps whose inputs changed; `steps` are the commands (tests pass their own). Returns the steps run, in
 * order. A step that fails throws, and nothing is recorded for it: the next start tries it again.
 */
function buildIfChanged(root, steps) {
  const before = readRecord(root);
  const { generate, compile } = inputs(root);
  const ran = [];
  if (before.generate !== generate) {
    steps.generate();
    ran.push('generate');
  }
  const sourcesNow = compile();
  const outputThere = fs.existsSync(path.join(root, 'dist', 'bin', 'start.js'));
  if (ran.length || before.compile !== sourcesNow || !outputThere) {
    steps.compile();
    ran.push('compile');
  }
  // The console (optional step: scripts/build-console.js), built again when its sources changed or it is absent.
  let consoleNow = before.console;
  if (steps.console) {
    consoleNow = consoleInputs(root);
    if (before.console !== consoleNow || !fs.existsSync(path.join(root, 'dist', 'console', 'index.html'))) {
      steps.console();
      ran.push('console');
    }
  }
  if (ran.length) {
    fs.mkdirSync(path.join(root, 'dist'), { recursive: true });
    const record = { generate, compile: sourcesNow, ...(consoleNow !== undefined ? { console: consoleNow } : {}) };
    fs.writeFileSync(path.join(root, RECORD), `${JSON.stringify(record, null, 2)}\n`);
  }
  return ran;
}

function run(root, command, args) {
  const r = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${path.basename(args[0] ?? command)} failed (exit ${r.status ?? r.signal})`);
}

module.exports = { buildIfChanged, sources };

if (require.main === module) {
  const root = path.join(__dirname, '..');
  try {
    buildIfChanged(root, {
      generate: () => run(root, process.execPath, [path.join(__dirname, 'prisma-generate.js')]),
      compile: () => run(root, process.execPath, [path.join(path.dirname(require.resolve('typescript/package.json', { paths: [root] })), 'bin', 'tsc'), '-p', 'tsconfig.build.json']),
      console: () => run(root, process.execPath, [path.join(__dirname, 'build-console.js')]),
    });
  } catch (e) {
    process.stderr.write(`build: ${e.message}\n`);
    process.exit(1);
  }
}
