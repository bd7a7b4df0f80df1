/** Numbers, money and dates in the reader's language. */
// The activity day is the server's (days from 01:00 Moscow time, as limit periods): one module, bundled in.
import { activityDay, addDays } from '../../shared/billing/periods';

export { activityDay };
export type Lang = 'en' | 'ru';

export function money(lang: Lang, v: number | string | null | undefined): string {
  if (v === null || v === undefined || v === '') return '—';
  const n = typeof v === 'string' ? Number(v) : v;
  const abs = Math.abs(n);
  const digits = abs !== 0 && abs < 0.01 ? 6 : 2;
  return new Intl.NumberFormat(lang === 'ru' ? 'ru-RU' : 'en-US', { style: 'currency', currency: 'RUB', minimumFractionDigits: 2, maximumFractionDigits: digits }).format(n);
}

export function num(lang: Lang, v: number | null | undefined): string {
  if (v === null || v === undefined) return '—';
  return new Intl.NumberFormat(lang === 'ru' ? 'ru-RU' : 'en-US').format(v);
}

export function dateTime(lang: Lang, iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Intl.DateTimeFormat(lang === 'ru' ? 'ru-RU' : 'en-GB', { dateStyle: 'short', timeStyle: 'medium', timeZone: 'Europe/Moscow' }).format(new Date(iso));
}

export function ms(v: number | null | undefined): string {
  return v === null || v === undefined ? '—' : `${v} ms`;
}

/** The activity days, newest last, of the `n` days ending with the current one. */
export function lastDays(n: number, now = new Date()): string[] {
  const today = activityDay(now);
  const out: string[] = [];
  for (let i = n - 1; i >= 0; i--) out.push(addDays(today, -i));
  return out;
}

/** Monday of the activity week and the 1st of the activity month containing `day`. */
export function weekStart(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  const back = (d.getUTCDay() + 6) % 7;
  return new Date(d.getTime() - back * 86_400_000).toISOString().slice(0, 10);
}
export function monthStart(day: string): string {
  return `${day.slice(0, 7)}-01`;
}

/** Sum of decimal amounts as exact kopeck-fractions (6 places) to avoid binary drift in the totals shown. */
export function sum(values: number[]): number {
  return Math.round(values.reduce((a, b) => a + Math.round(b * 1e6), 0)) / 1e6;
}

/** A CSV cell: quoted when it holds a separator, a quote or a line break; a leading =+-@ neutralised. */
export function csvCell(v: unknown): string {
  let s = v === null || v === undefined ? '' : String(v);
  if (/^[=+\-@]/.test(s) && typeof v === 'string') s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function download(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
