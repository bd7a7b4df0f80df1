/**
 * What /metrics says of settled generations: the RUB charged and reserved as exact decimals rounded to the kopeck (a
 * float sum drifts: three charges of 0.03568 read 0.10704000000000001), the tokens by model, and each provider attempt's
 * duration by endpoint. Also the sum npm start's parent makes of its processes' metrics (cluster-metrics.ts).
 */
import request from 'supertest';
import { createMetrics } from '../../shared/metrics/metrics';
import { aggregateProcesses } from '../../shared/metrics/cluster-metrics';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

let s: TestStack;
let org: StackOrg;

beforeAll(async () => {
  // 500 prompt tokens at 40 RUB and 98 completion tokens at 160 RUB per million: 0.03568 RUB a call.
  s = await createTestStack({ knobs: { promptTokens: 500, completionTokens: 98 } });
  org = await s.seed();
});
afterAll(() => s.close());

/** The lines of a registry's text that start with `name{` (or `name ` without labels). */
const lines = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));

describe('/metrics of settled generations', () => {
  it('shows the RUB charged to the kopeck, summed exactly; the tokens by model; each attempt\'s duration by endpoint', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }] });
      expect(r.status).toBe(200);
      expect(r.body.usage).toMatchObject({ prompt_tokens: 500, completion_tokens: 98, cost_rub: 0.03568 });
    }
    // A balance read waits for the settlements promised before it (read-your-writes): all three closes have committed.
    expect((await request(s.app).get('/v1/balance').set(org.auth)).status).toBe(200);
    // The API's registry holds the ledger's series (reservations and charges), the workers' the provider attempts (one
    // registry for both in a process of npm start).
    const api = await s.ctx.metrics.registry.metrics();
    expect(lines(api, 'switchyard_money_charged_rub_total')).toEqual([`switchyard_money_charged_rub_total{model="${STACK_MODELS.chat}"} 0.11`]);
    expect(s.ctx.metrics.moneyCharged.total({ model: STACK_MODELS.chat }).toString()).toBe('0.10704');
    const [reserved] = lines(api, 'switchyard_money_reserved_rub_total');
    expect(reserved).toMatch(/^switchyard_money_reserved_rub_total \d+(\.\d{1,2})?$/);
    expect(lines(api, 'switchyard_tokens_total').sort()).toEqual([
      `switchyard_tokens_total{model="${STACK_MODELS.chat}",type="input"} 1500`,
      `switchyard_tokens_total{model="${STACK_MODELS.chat}",type="output"} 294`,
    ]);
    const workers = await s.workerDeps.metrics.registry.metrics();
    const slug = s.ctx.catalog.models[STACK_MODELS.chat].endpoints[0].slug;
    expect(lines(workers, 'switchyard_provider_latency_seconds_count')).toEqual([`switchyard_provider_latency_seconds_count{provider="openai",endpoint="${slug}",outcome="ok"} 3`]);
  });
});

describe("npm start's sum of its processes' metrics", () => {
  it('sums money exactly (0.1 + 0.2 is 0.3, not 0.30000000000000004) and everything else as prom-client does', async () => {
    const parts = await Promise.all(
      ['0.1', '0.2', '0.35'].map(async (amount, i) => {
        const m = createMetrics();
        m.moneyCharged.inc({ model: 'a' }, amount);
        if (i === 0) m.moneyCharged.inc({ model: 'b' }, '1.005');
        m.moneyReserved.inc({}, '0.7');
        m.tokens.inc({ model: 'a', type: 'input' }, 10);
        return m.registry.getMetricsAsJSON();
      }),
    );
    const text = await aggregateProcesses(parts).metrics();
    expect(lines(text, 'switchyard_money_charged_rub_total').sort()).toEqual(['switchyard_money_charged_rub_total{model="a"} 0.65', 'switchyard_money_charged_rub_total{model="b"} 1.01']);
    expect(lines(text, 'switchyard_money_reserved_rub_total')).toEqual(['switchyard_money_reserved_rub_total 2.1']);
    expect(lines(text, 'switchyard_tokens_total')).toEqual(['switchyard_tokens_total{model="a",type="input"} 30']);
  });
});
