/**
 * Limit periods (decisions.md section 4): they start at 01:00 Moscow time, i.e. 22:00 UTC the day before
 * (Moscow has been UTC+3 all year since 2014). Daily every day, weekly on Monday, monthly on the 1st.
 * The SQL function sy_period_start computes the same instants; test/unit/billing checks the two agree.
 */
export type LimitReset = 'daily' | 'weekly' | 'monthly' | 'never';

const SHIFT_MS = 2 * 60 * 60 * 1000; // 22:00 UTC + 2 h = midnight

export function periodStart(reset: LimitReset, now: Date): Date {
  if (reset === 'never') return new Date(0);
  const shifted = new Date(now.getTime() + SHIFT_MS);
  const y = shifted.getUTCFullYear();
  const m = shifted.getUTCMonth();
  const d = shifted.getUTCDate();
  let start: number;
  if (reset === 'daily') start = Date.UTC(y, m, d);
  else if (reset === 'monthly') start = Date.UTC(y, m, 1);
  else {
    const weekday = (shifted.getUTCDay() + 6) % 7; // Monday = 0
    start = Date.UTC(y, m, d - weekday);
  }
  return new Date(start - SHIFT_MS);
}

/**
 * The day a moment belongs to, as `YYYY-MM-DD`: days start at 01:00 Moscow time, as limit periods do (GET /v1/activity;
 * the SQL function sy_activity_day computes the same, test/unit/billing/activity-day.test.ts checks the two agree).
 */
export function activityDay(at: Date): string {
  return new Date(at.getTime() + SHIFT_MS).toISOString().slice(0, 10);
}

/** `YYYY-MM-DD` plus `n` days (n may be negative). */
export function addDays(day: string, n: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
}
