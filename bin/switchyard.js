#!/usr/bin/env node
'use strict';
// The `switchyard` operator CLI (decisions.md section 1). The commands live in shared/cli/main.ts and run
// from the build: `npm run build` first.
const fs = require('node:fs');
const path = require('node:path');

const built = path.join(__dirname, '..', 'dist', 'shared', 'cli', 'main.js');
if (!fs.existsSync(built)) {
  process.stderr.write(`error: ${path.relative(process.cwd(), built) || built} not found: run \`npm run build\` first\n`);
  process.exit(1);
}

require(built)
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
