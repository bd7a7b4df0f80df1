import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withStartLock } from '../../shared/runtime/start-lock';

let dir: string;
beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-lock-'))));
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const quiet = () => {
  const warned: string[] = [];
  return { warned, logger: { debug() {}, info() {}, warn: (m: string) => void warned.push(m), error() {} } };
};

describe('the start lock of an embedded server', () => {
  it('runs one holder at a time: the second waits, says once who it waits for, and runs when the first is done', async () => {
    const file = path.join(dir, 'start.lock');
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const firstIn = new Promise<void>((r) => (entered = r));
    const first = withStartLock(file, { transient: false, ...quiet(), what: 'the server' }, async () => {
      entered();
      order.push('first in');
      await held;
      order.push('first out');
    });
    await firstIn;
    const second = quiet();
    let saidWaiting!: () => void;
    const waiting = new Promise<void>((r) => (saidWaiting = r));
    const logger = { ...second.logger, warn: (m: string) => (second.warned.push(m), saidWaiting()) };
    const later = withStartLock(file, { transient: true, logger, what: 'the server' }, async () => void order.push('second'));
    await waiting;
    expect(second.warned).toEqual([`the server is being started or stopped by the service (pid ${process.pid}): waiting for it`]);
    expect(order).toEqual(['first in']);
    release();
    await Promise.all([first, later]);
    expect(order).toEqual(['first in', 'first out', 'second']);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('breaks a lock whose process is gone (killed mid-start), and releases its own even when its work fails', async () => {
    const file = path.join(dir, 'start.lock');
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    fs.writeFileSync(file, JSON.stringify({ pid: Number(gone.stdout), transient: false, token: 'old' }));
    const q = quiet();
    await expect(withStartLock(file, { transient: true, logger: q.logger, what: 'the server' }, async () => 'ran')).resolves.toBe('ran');
    expect(q.warned).toEqual([]);
    await expect(withStartLock(file, { transient: true, logger: q.logger, what: 'the server' }, async () => Promise.reject(new Error('initdb failed')))).rejects.toThrow('initdb failed');
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
