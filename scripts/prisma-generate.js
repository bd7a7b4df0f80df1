#!/usr/bin/env node
// `prisma generate` needs no engine binary in Prisma 7, yet its CLI insists on fetching the schema engine from
// Prisma's CDN first, which offline machines cannot reach. Where no engine is installed, point it at a stub.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const env = { ...process.env };
const enginesDir = path.join(__dirname, '..', 'node_modules', '@prisma', 'engines');
const hasEngine = fs.existsSync(enginesDir) && fs.readdirSync(enginesDir).some((f) => f.startsWith('schema-engine'));
if (!env.PRISMA_SCHEMA_ENGINE_BINARY && !hasEngine && fs.existsSync('/bin/true')) env.PRISMA_SCHEMA_ENGINE_BINARY = '/bin/true';

const cli = require.resolve('prisma/build/index.js');
const r = spawnSync(process.execPath, [cli, 'generate'], { stdio: ['ignore', 'inherit', 'inherit'], env });
process.exit(r.status ?? 1);
