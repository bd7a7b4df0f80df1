import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'bullmq';
import { WRITTEN_FOR, bullmqScript } from '../../shared/queue/claims';

/**
 * Claim at enqueue copies what BullMQ's scripts do (shared/queue/claims.ts, its BullMQ part). An upgrade of BullMQ must re-read
 * them: these fail when the installed BullMQ is not the version the claim was written against, or its scripts differ.
 */
const root = path.resolve(__dirname, '../..');
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('BullMQ below its public API: one seam, pinned', () => {
  it('package.json pins BullMQ exactly to the version the claim was written for, and that version is installed', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    expect(pkg.dependencies.bullmq).toBe(WRITTEN_FOR.version);
    const installed = JSON.parse(fs.readFileSync(require.resolve('bullmq/package.json'), 'utf8'));
    expect(installed.version).toBe(WRITTEN_FOR.version);
  });

  it.each(Object.entries(WRITTEN_FOR.scripts))('the installed %s script is the one the claim copies', (file, hash) => {
    const script = bullmqScript(file as keyof typeof WRITTEN_FOR.scripts);
    expect(sha256(script.content)).toBe(hash);
  });

  it('the Worker methods ClaimingWorker uses still exist', () => {
    for (const m of ['callProcessJob', 'processJob', 'createJob', 'extendJobLocks']) expect(typeof (Worker.prototype as unknown as Record<string, unknown>)[m]).toBe('function');
  });

  it('no other module reaches into BullMQ internals', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) {
          if (!['node_modules', 'generated', 'dist'].includes(e.name)) walk(p);
        } else if (p.endsWith('.ts') && /bullmq\/dist|\.backend\b|raw2NextJobData/.test(fs.readFileSync(p, 'utf8'))) offenders.push(path.relative(root, p));
      }
    };
    for (const d of ['api', 'workers', 'shared', 'bin', 'bench']) walk(path.join(root, d));
    expect(offenders).toEqual(['shared/queue/claims.ts']);
  });
});
