import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createRedis, deleteKeys } from '../../shared/queue/redis';
import { runProcess } from '../helpers/run-process';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { TEST_REDIS_URL } from '../helpers/test-env';

// The request walks stay as short as they are (docs/architecture.md "Two walks"): bench/walk.ts counts the files and
// functions one request runs, by V8's coverage of the build, and no walk may pass the figures in bench/walks.json.
// Lower them when a walk shrinks.

const ROOT = path.resolve(__dirname, '../..');
type Figures = Record<string, { files: number; functions: number }>;

describe('the request walks', () => {
  let t: TestDb;
  const prefix = `{walk-${randomBytes(5).toString('hex')}}`;
  // Its own build, beside dist/: other test files run dist/ at the same time, and a rebuild under them is a race.
  const out = path.join(ROOT, `.walk-${process.pid}`);

  beforeAll(async () => {
    // The walk counts the build's functions (the sources run through a compiler of our own would count its helpers).
    await promisify(execFile)(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', out], { cwd: ROOT });
    t = await createTestDb();
  }, 60_000);
  afterAll(async () => {
    const redis = createRedis(TEST_REDIS_URL, { name: 'test-walk' });
    await deleteKeys(redis, `${prefix}*`).catch(() => undefined);
    redis.disconnect();
    await t?.drop();
    fs.rmSync(out, { recursive: true, force: true });
  });

  it('grow past none of the committed figures (bench/walks.json)', async () => {
    const committed = JSON.parse(fs.readFileSync(path.join(ROOT, 'bench/walks.json'), 'utf8')) as Figures;
    const r = await runProcess(process.execPath, [path.join(out, 'bench/walk.js'), '--json', '--repeat', '3'], {
      cwd: ROOT,
      env: {
        ...process.env,
        SWITCHYARD_DEMO: '1',
        DATABASE_URL: t.url,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: prefix,
        PORT: '0',
        DEMO_PROVIDER_PORT: '0',
        WORKER_METRICS_PORT: '0',
        LOG_LEVEL: 'error',
        // The leases' renewal is a process's timer, not a request's work: once a minute keeps it out of every walk.
        LEASE_IDLE_MS: '60000',
        LEASE_TTL_MS: '180000',
      },
    });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const measured = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Figures;
    expect(Object.keys(measured).sort()).toEqual(Object.keys(committed).sort());
    const grown = Object.entries(measured).flatMap(([walk, m]) =>
      (['files', 'functions'] as const).filter((k) => m[k] > committed[walk]![k]).map((k) => `${walk}: ${m[k]} ${k}, committed ${committed[walk]![k]}`),
    );
    expect(grown).toEqual([]);
  }, 120_000);
});
