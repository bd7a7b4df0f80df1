import { Counter, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import { Decimal, money, type MoneyLike } from '../money';

/**
 * Rubles in /metrics, exact. prom-client's counters add floats (0.10703999999999998 after a few charges), so a money
 * counter keeps its running totals as Decimals, per label set, and shows each rounded to the kopeck at scrape time:
 * the rounding never accumulates, and a total only ever rounds up as it grows. Under `npm start`'s cluster the
 * processes' totals are summed exactly too (`sumMoneyExactly`, shared/metrics/cluster-metrics.ts).
 *
 * A money counter's name ends in `_rub_total` (one rule: that is how the cluster's sum finds them).
 */
export const isMoneyMetric = (name: string): boolean => name.endsWith('_rub_total');

/** RUB shown in /metrics: the exact amount rounded to the kopeck (half up), as a number. */
export function kopecks(amount: Decimal): number {
  return Number(amount.toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2));
}

type Labels<L extends string> = Partial<Record<L, string>>;

/** One label set's key, whatever the order its labels were given in. */
const labelKey = (labels: object): string => JSON.stringify(Object.entries(labels).sort(([x], [y]) => (x < y ? -1 : 1)));

export class MoneyCounter<L extends string = never> {
  private readonly totals = new Map<string, { labels: Labels<L>; total: Decimal }>();

  constructor(config: { name: string; help: string; labelNames?: readonly L[]; registers: Registry[] }) {
    if (!isMoneyMetric(config.name)) throw new Error(`a money counter's name ends in _rub_total: ${config.name}`);
    const totals = this.totals;
    new Counter<L>({
      name: config.name,
      help: config.help,
      labelNames: config.labelNames ?? [],
      registers: config.registers,
      collect() {
        this.reset();
        for (const t of totals.values()) this.inc(t.labels, kopecks(t.total));
      },
    });
  }

  /** Adds an amount (a Decimal or a decimal string; nothing for zero or less). */
  inc(labels: Labels<L>, amount: MoneyLike): void {
    const a = money(amount);
    if (!a.greaterThan(0)) return;
    const key = labelKey(labels);
    const t = this.totals.get(key);
    if (t) t.total = t.total.plus(a);
    else this.totals.set(key, { labels: { ...labels }, total: a });
  }

  /** The exact running total of one label set (0 when none). */
  total(labels: Labels<L> = {}): Decimal {
    return this.totals.get(labelKey(labels))?.total ?? money(0);
  }
}

type MetricJson = MetricObjectWithValues<MetricValue<string>>;

/**
 * The processes' metrics (each a registry's `getMetricsAsJSON()`) with every money series summed exactly: each
 * process's kopeck value is read as the decimal it prints as, and the sum of each label set goes to the first process
 * alone, so prom-client's aggregation (a float sum) adds it to nothing.
 */
export function sumMoneyExactly(parts: MetricJson[][]): MetricJson[][] {
  const sums = new Map<string, { metric: MetricJson; values: Map<string, { labels: MetricValue<string>['labels']; total: Decimal }> }>();
  const rest = parts.map((metrics) =>
    metrics.filter((m) => {
      if (!isMoneyMetric(m.name)) return true;
      let s = sums.get(m.name);
      if (!s) sums.set(m.name, (s = { metric: m, values: new Map() }));
      for (const v of m.values) {
        const key = labelKey(v.labels);
        const seen = s.values.get(key);
        if (seen) seen.total = seen.total.plus(String(v.value));
        else s.values.set(key, { labels: v.labels, total: new Decimal(String(v.value)) });
      }
      return false;
    }),
  );
  if (rest.length === 0) return rest;
  const exact = [...sums.values()].map(({ metric, values }) => ({ ...metric, values: [...values.values()].map((v) => ({ labels: v.labels, value: kopecks(v.total) })) }));
  return [[...rest[0], ...exact], ...rest.slice(1)];
}
