import { useApp } from './app';
import { money } from './format';

export const PALETTE = ['#1f77b4', '#d95f02', '#1b9e77', '#7570b3', '#e7298a', '#66a61e', '#a6761d', '#525252'];

export interface Series {
  name: string;
  values: number[];
}

/**
 * Bars per day, stacked by series, as plain SVG. Each bar segment carries a <title> (its day, series and amount) and
 * the chart a text summary for screen readers; at most 7 series, the rest summed under "other".
 */
export function StackedBars({ days, series, label, other = 'other' }: { days: string[]; series: Series[]; label: string; other?: string }) {
  const { lang, t } = useApp();
  const ranked = [...series].sort((a, b) => total(b) - total(a));
  const shown = ranked.slice(0, 7);
  if (ranked.length > 7) shown.push({ name: other, values: days.map((_, i) => ranked.slice(7).reduce((a, s) => a + s.values[i], 0)) });
  const totals = days.map((_, i) => shown.reduce((a, s) => a + s.values[i], 0));
  const max = Math.max(0, ...totals);
  const W = 600;
  const H = 200;
  const pad = { l: 4, r: 4, t: 8, b: 22 };
  const bw = (W - pad.l - pad.r) / Math.max(1, days.length);
  const y = (v: number) => (max > 0 ? (v / max) * (H - pad.t - pad.b) : 0);
  return (
    <figure class="chart">
      <figcaption>{label}</figcaption>
      {max === 0 ? (
        <p class="muted">{t('chart.empty')}</p>
      ) : (
        <>
          <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${label}: ${money(lang, totals.reduce((a, b) => a + b, 0))}`} preserveAspectRatio="none">
            {days.map((d, i) => {
              let base = H - pad.b;
              return (
                <g key={d}>
                  {shown.map((s, k) => {
                    const h = y(s.values[i]);
                    base -= h;
                    return h > 0 ? (
                      <rect x={pad.l + i * bw + 1} y={base} width={Math.max(1, bw - 2)} height={h} fill={PALETTE[k % PALETTE.length]}>
                        <title>{`${d} · ${s.name}: ${money(lang, s.values[i])}`}</title>
                      </rect>
                    ) : null;
                  })}
                  {(i === days.length - 1 || (i % 7 === 0 && days.length - 1 - i >= 4)) && (
                    <text x={pad.l + i * bw + bw / 2} y={H - 6} text-anchor="middle" class="axis">
                      {d.slice(5)}
                    </text>
                  )}
                </g>
              );
            })}
          </svg>
          <ul class="legend">
            {shown.map((s, k) => (
              <li key={s.name}>
                <span class="swatch" data-color={k % PALETTE.length} aria-hidden="true" />
                {s.name}: {money(lang, total(s))}
              </li>
            ))}
          </ul>
        </>
      )}
    </figure>
  );
}

/** Horizontal bars for a ranking (top keys, top members). */
export function BarList({ rows, label }: { rows: { name: string; value: number }[]; label: string }) {
  const { lang, t } = useApp();
  const max = Math.max(0, ...rows.map((r) => r.value));
  if (!rows.length) return <p class="muted">{t('none')}</p>;
  return (
    <ul class="barlist" aria-label={label}>
      {rows.map((r) => (
        <li key={r.name}>
          <span class="barlist-name">{r.name}</span>
          <svg viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true" class="barlist-bar">
            <rect x="0" y="0" height="8" width={max > 0 ? Math.max(0.5, (r.value / max) * 100) : 0} fill={PALETTE[0]} />
          </svg>
          <span class="barlist-value">{money(lang, r.value)}</span>
        </li>
      ))}
    </ul>
  );
}

function total(s: Series): number {
  return s.values.reduce((a, b) => a + b, 0);
}
