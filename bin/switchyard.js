#!/usr/bin/env node
'use strict';
// The `switchyard` operator CLI (decisions.md section 1). The commands live in shared/cli/ (main.ts). They run from
// the TypeScript sources (bin/ts-register.js compiles them with @swc/core, cached), so the CLI works right after
// `npm install`; where the sources or @swc/core are absent (a pruned image), from the build in dist/.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const source = path.join(root, 'shared', 'cli', 'main.ts');
const built = path.join(root, 'dist', 'shared', 'cli', 'main.js');

function loadCli() {
  if (fs.existsSync(source) && require('./ts-register').register()) return require(source);
  if (fs.existsSync(built)) return require(built);
  process.stderr.write('error: cannot run the CLI: install dependencies with `npm install` (or build with `npm run build`)\n');
  process.exit(1);
}

loadCli()
  .runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env })
  .then(
    (code) => {
      // Let stdout drain (it may be a pipe), then exit: embedded children of this run are already stopped.
      process.stdout.write('', () => process.exit(code));
    },
    (err) => {
      process.stderr.write(`error: ${(err && err.message) || err}\n`);
      process.exit(1);
    },
  );
