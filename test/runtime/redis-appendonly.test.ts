import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Redis from 'ioredis';
import { createRedis, warnWithoutAppendOnly, whenReady } from '../../shared/queue/redis';
import { redisPing } from '../../shared/runtime/embedded-redis';
import { portBelowEphemeral } from '../helpers/port-below-ephemeral';
import { waitFor } from '../helpers/until';

// At start every process says so when its Redis keeps no append-only file (README.md "Redis in production"), and
// says nothing where CONFIG is not permitted (managed Redis). A redis-server of this file's own: the shared one's
// settings are not ours to change.

describe('warnWithoutAppendOnly', () => {
  let child: ChildProcess;
  let dir: string;
  let port: number;
  let admin: Redis;
  const connections: Redis[] = [];
  const connect = async (url: string) => {
    const r = createRedis(url, { name: 'test-appendonly' });
    connections.push(r);
    await whenReady(r);
    return r;
  };
  const warnings: string[] = [];
  const logger = { warn: (m: string) => void warnings.push(m) };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-appendonly-'));
    port = await portBelowEphemeral();
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    await waitFor('redis-server to answer', () => redisPing(port, ''), 10_000, 50);
    admin = await connect(`redis://127.0.0.1:${port}`);
    // A managed Redis's application user: everything but CONFIG.
    await admin.call('ACL', 'SETUSER', 'app', 'on', '>app-password', '~*', '&*', '+@all', '-config');
  });
  afterAll(async () => {
    // Gone before its folder is, with what it forked: `appendonly yes` starts an append-only rewrite in a child process,
    // which a SIGKILL of the server leaves writing into the folder (the removal then failed, ENOTEMPTY). SHUTDOWN stops
    // that child and removes its temporary file; SIGKILL only when the server does not exit.
    const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', r));
    await admin.call('SHUTDOWN', 'NOSAVE').catch(() => undefined);
    for (const r of connections) r.disconnect();
    const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(killer);
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  });
  beforeEach(() => void (warnings.length = 0));

  it('warns once, naming appendonly, when Redis keeps no append-only file', async () => {
    expect(await warnWithoutAppendOnly(admin, logger)).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('appendonly yes');
  });

  it('says nothing when CONFIG is not permitted (managed Redis)', async () => {
    const app = await connect(`redis://app:app-password@127.0.0.1:${port}`);
    await expect(app.config('GET', 'appendonly')).rejects.toThrow(/NOPERM/);
    expect(await warnWithoutAppendOnly(app, logger)).toBe(false);
    expect(warnings).toEqual([]);
  });

  it('says nothing once appendonly is yes', async () => {
    await admin.config('SET', 'appendonly', 'yes');
    expect(await warnWithoutAppendOnly(admin, logger)).toBe(false);
    expect(warnings).toEqual([]);
  });
});
