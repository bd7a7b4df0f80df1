import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Builds dist/ (the processes under test run the build, so a stale one would test old code) unless
 * FAULTS_SKIP_BUILD=1, and starts an empty results folder (a file per case).
 */
export default function globalSetup(): void {
  process.env.FAULTS_STARTED_AT = String(Date.now());
  const root = path.resolve(__dirname, '../../..');
  if (process.env.FAULTS_SKIP_BUILD !== '1') {
    execFileSync(process.execPath, [path.join(root, 'scripts/prisma-generate.js')], { cwd: root, stdio: 'inherit' });
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  }
  process.env.FAULTS_RESULTS ??= path.join(os.tmpdir(), `switchyard-faults-${process.pid}`);
  fs.rmSync(process.env.FAULTS_RESULTS, { recursive: true, force: true });
  fs.mkdirSync(process.env.FAULTS_RESULTS, { recursive: true });
}
