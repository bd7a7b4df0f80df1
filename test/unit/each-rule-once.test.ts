import fs from 'node:fs';
import path from 'node:path';

/**
 * Each rule in one place (docs/architecture.md "Endings and rules"), read from the production sources as text:
 * - one ending: a generation's close (its charge or release and its record's final write), the settlement journal's
 *   writes and a stream's checkpoints are made in shared/billing/ only, and there by shared/billing/ending.ts (the
 *   journal keeping a promise aside); every kind reports its outcome to `endGeneration`;
 * - nothing else writes a generation's final status (SQL or Prisma), and no SQL money function is called outside the ledger;
 * - a cancel reaches a running job of any kind by its stop message (no polling);
 * - "is this the first run of its job, and did a claim start it?" is one function, and so is "may it be claimed?";
 * - so is what a wait that ran out does (text, streams, embeddings, typed questions, images, media).
 */
const ROOT = path.resolve(__dirname, '../..');
const PRODUCTION = ['api', 'workers', 'shared', 'bin'];

function sources(): Array<{ file: string; text: string }> {
  const out: Array<{ file: string; text: string }> = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'generated' && e.name !== 'node_modules') walk(p);
      } else if (p.endsWith('.ts')) out.push({ file: path.relative(ROOT, p), text: fs.readFileSync(p, 'utf8').replace(/^\s*(\/\/|\*|\/\*\*).*$/gm, '') });
    }
  };
  for (const d of PRODUCTION) walk(path.join(ROOT, d));
  return out;
}

/** Where `pattern` occurs, as `file: match`. */
const hits = (files: Array<{ file: string; text: string }>, pattern: RegExp) => files.flatMap((s) => [...s.text.matchAll(pattern)].map((m) => `${s.file}: ${m[0]}`));

describe('each rule in one place', () => {
  const all = sources();
  const billing = (f: string) => f.startsWith('shared/billing/');
  const outside = all.filter((s) => !billing(s.file));

  it('no file outside shared/billing/ closes a generation: no ledger close, discard or close row, no finish of its own', () => {
    expect(all.length).toBeGreaterThan(100); // the scan sees the sources
    expect(hits(outside, /\b(?:ledger|generations)\.(?:close|discard|finish|finishRow)\(|\bcloseRowOf\(|\bsy_(?:settle|reserve|ledger_\w+)\b/g)).toEqual([]);
  });

  it('no file outside shared/billing/ writes the settlement journal or a stream checkpoint', () => {
    expect(hits(outside, /\bsettlements\.(?:promise|keep|kept|erase|keepCheckpoint|fenceForCancel|releaseCancel|checkpoint|eraseCheckpoint)\(/g)).toEqual([]);
  });

  it("nothing writes a generation's final status but the ledger's close (SQL or Prisma)", () => {
    const sql = hits(all, /UPDATE generations\s+SET[^`]*status\s*=\s*'(?:completed|failed|cancelled)'/g);
    const prisma = hits(all, /generation\.update(?:Many)?\(\{[^;]*status:\s*'(?:completed|failed|cancelled)'/g);
    expect([...sql, ...prisma]).toEqual([]);
  });

  it('in shared/billing/, only ending.ts (and the journal keeping a promise) commits a close', () => {
    const closers = all.filter((s) => billing(s.file) && /\bledger\.close\(|\bdeps\.ledger\.close\(/.test(s.text)).map((s) => s.file);
    expect(closers.sort()).toEqual(['shared/billing/ending.ts', 'shared/billing/settlement-journal.ts']);
  });

  it('a cancel reaches a running job one way, its stop message: no worker polls the database for it', () => {
    const workers = all.filter((s) => s.file.startsWith('workers/'));
    expect(hits(workers, /setInterval\([^;]*?\.db\.generation[^;]*?cancelled/gs)).toEqual([]);
    // Media takes its run's stop as text does (shared/queue/generation-bus.ts JobStops).
    expect(hits(workers, /\bstops\.start\(/g).map((h) => h.split(':')[0]).sort()).toEqual(['workers/processors/embeddings.processor.ts', 'workers/processors/text.processor.ts', 'workers/services/media-executor.ts']);
  });

  it('"first, claimed run?" is asked of one function (shared/queue/claims.ts runOf)', () => {
    const asked = hits(all.filter((s) => s.file !== 'shared/queue/claims.ts'), /\battemptsStarted\s*(?:<=|>=|===|==|<|>)|:claim:/g);
    expect(asked).toEqual([]);
  });

  it('"may this job be claimed?" is asked of one function on the job\'s side (shared/queue/claims.ts mayClaim)', () => {
    // Interactive or background is workClassOf's (fairness.ts); which queues claim at once, AT_ONCE_QUEUES, read by
    // mayClaim and by the worker pool that makes those queues' workers offer their slots.
    const twice = hits(
      all.filter((s) => !['shared/queue/claims.ts', 'shared/queue/fairness.ts', 'workers/worker-pool.ts'].includes(s.file)),
      /\bAT_ONCE_QUEUES\.has\(|\bworkClass\s*===\s*'background'|===\s*'async'\s*\|\|[^;]*===\s*'batch'/g,
    );
    expect(twice).toEqual([]);
  });

  it('a wait that ran out follows one rule (api/services/text-replies.ts outwaited): whoever waits for a final message asks it', () => {
    const waiters = all.filter((s) => /\.waitFinal\(/.test(s.text) && s.file !== 'api/services/generation-gateway.ts');
    expect(waiters.length).toBeGreaterThan(1); // text, and images and media
    expect(waiters.filter((s) => !/\boutwaited\(/.test(s.text)).map((s) => s.file)).toEqual([]);
  });

  it("the reservation's bound an ending reads is the job's `reserved`, for every kind: no worker reads it from the record", () => {
    expect(hits(all.filter((s) => s.file.startsWith('workers/')), /\breservedAmount\b/g)).toEqual([]);
  });

  it('every kind that ends generations reports its outcome to endGeneration', () => {
    const enders = all.filter((s) => /\bendGeneration\(/.test(s.text) && !billing(s.file)).map((s) => s.file);
    // text, embeddings and typed questions (attempt-loop), batch lines, media and images, the cancel, an orphaned run, the reaper.
    for (const f of ['workers/services/attempt-loop.ts', 'workers/services/text-executor.ts', 'workers/services/media-endings.ts', 'api/services/generation-gateway.ts', 'workers/processors/reap-stuck-generations.processor.ts', 'workers/services/drawn-jobs.ts']) {
      expect(enders).toContain(f);
    }
  });
});
