/**
 * The results table (docs/faults.md): each case records one row; the global teardown prints the table and,
 * with FAULTS_DOCS=1, writes it to docs/faults.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Audit } from './audit';

export interface ResultRow {
  case: string;
  injected: string;
  requests: number;
  /** Non-2xx replies by status, e.g. "503×4, 402×1", or "none". */
  errors: string;
  /** RUB, exact decimal string; must be "0". */
  moneyLost: string;
  /** What was checked and held (or what failed). */
  holds: string;
  ok: boolean;
  seconds: number;
}

/** A folder of one file per case: the cases run in two jest workers at once, and each writes only its own row. */
export const resultsDir = (): string => process.env.FAULTS_RESULTS ?? path.join(os.tmpdir(), 'switchyard-faults-results');

export function readRows(): ResultRow[] {
  let files: string[];
  try {
    files = fs.readdirSync(resultsDir()).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  return files.map((f) => JSON.parse(fs.readFileSync(path.join(resultsDir(), f), 'utf8')) as ResultRow);
}

export function recordRow(row: ResultRow): void {
  fs.mkdirSync(resultsDir(), { recursive: true });
  fs.writeFileSync(path.join(resultsDir(), `${row.case.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 80)}.json`), JSON.stringify(row, null, 2));
}

const cell = (s: string | number) => String(s).replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderTable(rows: ResultRow[]): string {
  const sorted = [...rows].sort((a, b) => a.case.localeCompare(b.case, undefined, { numeric: true }));
  const lines = [
    '| case | what was injected | requests sent | errors seen (by status) | money lost (RUB) | what held | result | time |',
    '| --- | --- | ---: | --- | ---: | --- | --- | ---: |',
    ...sorted.map((r) => `| ${cell(r.case)} | ${cell(r.injected)} | ${r.requests} | ${cell(r.errors)} | ${cell(r.moneyLost)} | ${cell(r.holds)} | ${r.ok ? 'pass' : '**FAIL**'} | ${r.seconds.toFixed(1)} s |`),
  ];
  return lines.join('\n');
}

/** Collects what must hold; the case records its row, then fails with every broken expectation at once. */
export class Checks {
  readonly failures: string[] = [];
  private readonly started = Date.now();

  constructor(
    readonly name: string,
    readonly injected: string,
  ) {}

  that(condition: boolean, failure: string): boolean {
    if (!condition) this.failures.push(failure);
    return condition;
  }

  /**
   * Records the row (even when something failed, so the table shows it) and returns the failures, printed first as a
   * short list: a CI log cut to its head still names what broke, before the processes' log tails and the diff.
   */
  finish(r: { requests: number; errors: string; moneyLost: string; holds: string }): string[] {
    if (this.failures.length) console.error(`${this.name}: ${this.failures.length} check(s) failed\n- ${this.failures.join('\n- ')}`);
    recordRow({ case: this.name, injected: this.injected, ...r, ok: this.failures.length === 0, seconds: (Date.now() - this.started) / 1000 });
    return this.failures;
  }

  /** `finish` after a money audit (audit.ts): every problem it found is a failure, and its lost RUB the row's. */
  finishAudited(a: Pick<Audit, 'problems' | 'lost'>, r: { requests: number; errors: string; holds: string }): string[] {
    for (const p of a.problems) this.that(false, p);
    return this.finish({ ...r, moneyLost: a.lost.toString() });
  }
}
