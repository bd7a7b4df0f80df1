/**
 * What operators import from deploy/ (Grafana dashboard, Prometheus alert rules, KEDA and HPA examples) names
 * only metrics that a real /metrics serves; and the queue-age signal they scale and alert on.
 */
import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(() => h.close());

const DEPLOY = path.resolve(__dirname, '../../deploy');

/** Metric families a scrape declares (`# TYPE name kind`). */
async function families(): Promise<Map<string, string>> {
  const res = await request(h.app).get('/metrics');
  expect(res.status).toBe(200);
  return new Map([...res.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** The series a query names: histogram suffixes belong to their family. */
function family(name: string, known: Map<string, string>): string {
  for (const suffix of ['_bucket', '_count', '_sum']) {
    const base = name.slice(0, -suffix.length);
    if (name.endsWith(suffix) && known.get(base) === 'histogram') return base;
  }
  return name;
}

describe('deploy/', () => {
  it('names only metrics that /metrics serves, in the dashboard, the alert rules and the autoscaling examples', async () => {
    const known = await families();
    const files = fs.readdirSync(DEPLOY).filter((f) => /\.(json|ya?ml)$/.test(f));
    expect(files).toEqual(expect.arrayContaining(['grafana-dashboard.json', 'prometheus-alerts.yaml', 'keda-scaledobject.yaml', 'hpa-external-metric.yaml']));
    const missing: string[] = [];
    for (const f of files) {
      const text = fs.readFileSync(path.join(DEPLOY, f), 'utf8');
      // The HPA's External metric name is the adapter's alias of switchyard_queue_jobs, not a scraped series.
      const names = new Set([...text.matchAll(/\bswitchyard_[a-z0-9_]+/g)].map((m) => m[0]).filter((n) => n !== 'switchyard_queue_backlog'));
      for (const n of names) if (!known.has(family(n, known))) missing.push(`${f}: ${n}`);
    }
    expect(missing).toEqual([]);
  });

  it('the dashboard has the panels operators expect, each with a query', () => {
    const dash = JSON.parse(fs.readFileSync(path.join(DEPLOY, 'grafana-dashboard.json'), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    const titles = dash.panels.map((p) => p.title).join(' | ');
    for (const word of ['Requests', 'Latency', 'Errors', 'Queue depth', 'oldest waiting', 'Spend per model']) expect(titles).toContain(word);
    for (const p of dash.panels) expect(p.targets.length).toBeGreaterThan(0);
  });

  it('reports the age of the oldest waiting job per queue (0 when none waits)', async () => {
    const q = h.app.locals.ctx.queues.media;
    await q.add('probe', { n: 1 }, { timestamp: Date.now() - 90_000 });
    await q.add('probe', { n: 2 });
    const res = await request(h.app).get('/metrics');
    const age = (queue: string) => Number(new RegExp(`^switchyard_queue_oldest_waiting_seconds\\{queue="${queue}"\\} (\\S+)$`, 'm').exec(res.text)?.[1]);
    expect(age('media')).toBeGreaterThanOrEqual(90);
    expect(age('media')).toBeLessThan(120);
    expect(age('text')).toBe(0);
  });
});

describe('docker-compose.yml', () => {
  const compose = fs.readFileSync(path.resolve(__dirname, '../../docker-compose.yml'), 'utf8');

  it('never signs with a secret anyone knows: unset, one is generated into the home every process shares', () => {
    const secret = /SWITCHYARD_SECRET: \$\{SWITCHYARD_SECRET:-([^}]*)\}/.exec(compose);
    expect(secret?.[1]).toBe('');
    // API and worker replicas mount the same home (the generated secret, and local files without S3).
    expect(compose.match(/volumes: \[home:\/app\/\.switchyard\]/g)).toHaveLength(2);
  });
});
