import { RoutePlanner } from '../../../api/services/route-planner';
import type { Principal } from '../../../shared/auth/principal';
import { AppError } from '../../../shared/errors/app-error';
import type { EndpointStats } from '../../../shared/routing/routing.types';
import type { EndpointStatsStore } from '../../../shared/services/endpoint-stats.store';
import { buildCatalog, slugs } from './catalog-fixture';

/**
 * RoutePlanner keeps what the catalog decides of a plan per request shape (plan-route.ts chooseEndpoints): what it
 * keeps must not stand in for what each request reads afresh (permissions, statistics, stickiness), and stays bounded.
 */
const M = 'openai/gpt-4.1-mini';
const N = 'anthropic/claude-haiku';
const catalog = buildCatalog({
  [M]: { endpoints: [{ provider: 'acme' }, { provider: 'beta', supports: ['stream'] }, { provider: 'gamma' }] },
  [N]: { endpoints: [{ provider: 'beta' }] },
});

function setup() {
  let stats: Record<string, EndpointStats> = {};
  const sticky = new Map<string, string>();
  const store = {
    snapshot: () => stats,
    sticky: async (key: string) => sticky.get(key) ?? null,
  } as unknown as EndpointStatsStore;
  const planner = new RoutePlanner(catalog, store);
  return { planner, setStats: (s: Record<string, EndpointStats>) => (stats = s), sticky, kept: () => (planner as unknown as { shapes: Map<string, unknown> }).shapes };
}

const anyone: Principal = { kind: 'key', organizationId: 'org', keyId: 'k1', userId: null, allowedModels: [], rateLimitPerMinute: null };
const limited: Principal = { ...anyone, keyId: 'k2', allowedModels: [N] };

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(AppError);
  return e as AppError;
}

describe('RoutePlanner: the plan of a request shape met before', () => {
  it('plans it as the first time, with the same warnings and parameters, in arrays of its own', async () => {
    const { planner } = setup();
    const ask = { principal: anyone, model: M, modelType: 'chat' as const, requestedParameters: ['tools'], provider: { ignore: ['nobody'] } };
    const first = await planner.plan(ask);
    first.plan.warnings.push('changed by its caller');
    first.plan.dropped.push({ endpoint: 'x', provider: 'x', model: M, reason: 'ignore', detail: 'x' });
    const again = await planner.plan(ask);
    expect(slugs(again.plan.candidates)).toEqual([`${M}:acme`, `${M}:beta`, `${M}:gamma`]);
    expect(again.plan.warnings).toEqual(["provider.ignore names unknown provider 'nobody'"]);
    expect(again.plan.dropped).toEqual([]);
    expect(again.plan.droppedParameters).toEqual(['tools']);
    expect(again.candidates.map((c) => c.dropParams)).toEqual([[], ['tools'], []]);
    expect(again.plan.warningsByEndpoint[`${M}:beta`]).toEqual([`Parameter 'tools' is not supported by ${M} via beta and was ignored`]);
  });

  it('reads the statistics of every request: a failing endpoint goes last as soon as they say so', async () => {
    const { planner, setStats } = setup();
    const ask = { principal: anyone, model: M, modelType: 'chat' as const };
    expect((await planner.plan(ask)).candidates.map((c) => c.slug)).toEqual([`${M}:acme`, `${M}:beta`, `${M}:gamma`]);
    setStats({ [`${M}:acme`]: { samples: 20, failureRate: 0.9 } });
    expect((await planner.plan(ask)).candidates.map((c) => c.slug)).toEqual([`${M}:beta`, `${M}:gamma`, `${M}:acme`]);
    setStats({ [`${M}:beta`]: { samples: 1, retryAfterUntil: Date.now() + 60_000 } });
    expect((await planner.plan(ask)).candidates.map((c) => c.slug)).toEqual([`${M}:acme`, `${M}:gamma`, `${M}:beta`]);
    // With fallbacks off, the one endpoint tried is the first healthy one of this request.
    const single = { ...ask, model: `${M}@allow_fallbacks=false` };
    expect((await planner.plan(single)).candidates.map((c) => c.slug)).toEqual([`${M}:acme`]);
    setStats({ [`${M}:acme`]: { samples: 20, failureRate: 0.9 } });
    const plan = await planner.plan(single);
    expect(plan.candidates.map((c) => c.slug)).toEqual([`${M}:beta`]);
    expect(plan.plan.dropped.map((d) => [d.endpoint, d.reason])).toEqual([[`${M}:gamma`, 'allow_fallbacks'], [`${M}:acme`, 'allow_fallbacks']]);
  });

  it('reads stickiness and permissions for every request', async () => {
    const { planner, sticky } = setup();
    const ask = { model: M, models: [N], modelType: 'chat' as const, stickiness: 'session-1' };
    expect((await planner.plan({ ...ask, principal: anyone })).candidates.map((c) => c.slug)).toEqual([`${M}:acme`, `${M}:beta`, `${M}:gamma`, `${N}:beta`]);
    const planned = await planner.plan({ ...ask, principal: anyone });
    sticky.set(planned.stickyKey!, `${M}:gamma`);
    expect((await planner.plan({ ...ask, principal: anyone })).candidates[0]!.slug).toBe(`${M}:gamma`);
    expect((await refusal(planner.plan({ ...ask, principal: limited }))).code).toBe('FORBIDDEN');
  });

  it('refuses a bad request every time, and keeps nothing of it', async () => {
    const { planner, kept } = setup();
    for (let i = 0; i < 2; i++) {
      expect((await refusal(planner.plan({ principal: anyone, model: 'no/such-model', modelType: 'chat' }))).code).toBe('NOT_FOUND');
      expect((await refusal(planner.plan({ principal: anyone, model: M, modelType: 'image' }))).code).toBe('NOT_FOUND');
      expect((await refusal(planner.plan({ principal: anyone, model: M, modelType: 'chat', provider: { sort: 'cheapest' as never } }))).code).toBe('BAD_REQUEST');
    }
    expect(kept().size).toBe(0);
  });

  it('keeps a bounded number of shapes, and none spelled too long', async () => {
    const { planner, kept } = setup();
    for (let i = 0; i < 300; i++) await planner.plan({ principal: anyone, model: M, modelType: 'chat', provider: { ignore: [`p${i}`] } });
    expect(kept().size).toBe(256);
    const long = { principal: anyone, model: M, modelType: 'chat' as const, provider: { ignore: ['x'.repeat(2000)] } };
    expect(slugs((await planner.plan(long)).plan.candidates)).toEqual([`${M}:acme`, `${M}:beta`, `${M}:gamma`]);
    expect([...kept().keys()].some((k) => k.includes('x'.repeat(2000)))).toBe(false);
  });
});
