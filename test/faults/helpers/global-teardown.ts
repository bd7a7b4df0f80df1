import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readRows, renderTable } from './report';

/** Prints the results table; with FAULTS_DOCS=1 also writes docs/faults.md. */
export default function globalTeardown(): void {
  const rows = readRows();
  const table = renderTable(rows);
  const seconds = (Date.now() - Number(process.env.FAULTS_STARTED_AT ?? Date.now())) / 1000;
  process.stdout.write(`\nFault suite results (${rows.length} cases, ${seconds.toFixed(0)} s):\n${table}\n`);
  if (process.env.FAULTS_DOCS === '1') {
    const root = path.resolve(__dirname, '../../..');
    const doc = fs.readFileSync(path.join(__dirname, 'faults.template.md'), 'utf8')
      .replace('{{TABLE}}', table)
      .replace('{{WHEN}}', new Date().toISOString().replace(/\.\d+Z$/, 'Z'))
      .replace('{{MACHINE}}', `${os.cpus().length} CPU, Node ${process.version}, ${os.platform()}`)
      .replace('{{SECONDS}}', seconds.toFixed(0));
    fs.mkdirSync(path.join(root, 'docs'), { recursive: true });
    fs.writeFileSync(path.join(root, 'docs/faults.md'), doc);
  }
  if (process.env.FAULTS_RESULTS) fs.rmSync(process.env.FAULTS_RESULTS, { recursive: true, force: true });
}
