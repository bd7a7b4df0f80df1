import { qs, type Api } from './api';
import { lastDays, sum } from './format';
import type { Series } from './charts';

export interface ActivityItem {
  date: string;
  model: string;
  provider_name: string;
  endpoint_id: string;
  usage: number;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
}

export interface KeyView {
  id: string;
  name: string;
  label: string;
  user_id: string | null;
  limit: number | null;
  limit_remaining: number | null;
  limit_reset: string | null;
  usage: number;
  allowed_models: string[] | null;
  rate_limit_per_minute: number | null;
  disabled: boolean;
  revoked: boolean;
  created_at: string;
}

export interface Member {
  id: string;
  email: string;
  role: 'owner' | 'admin' | 'member';
  status: 'invited' | 'active';
  limit: number | null;
  limitReset: string | null;
  limitRemaining: number | null;
  createdAt: string;
}

export interface Balance {
  amount: string;
  available: string;
  reserved: string;
  spent: string;
  currency: 'RUB';
  updatedAt: string;
  key: unknown;
  member: { limit: string; limitRemaining: string; limitReset: string } | null;
}

export async function activity(api: Api, params: { days?: number; api_key_id?: string; user_id?: string }): Promise<ActivityItem[]> {
  return (await api.get<{ data: ActivityItem[] }>(`/v1/activity${qs(params)}`)).data;
}

export async function keys(api: Api): Promise<KeyView[]> {
  return (await api.get<{ data: KeyView[] }>('/v1/keys')).data;
}

export async function members(api: Api): Promise<Member[]> {
  return (await api.get<{ data: Member[] }>('/v1/members')).data;
}

/** Usage per day (oldest first over `days`) stacked by `by` (model, by default). */
export function seriesByDay(items: ActivityItem[], days: number, by: (i: ActivityItem) => string = (i) => i.model): { days: string[]; series: Series[] } {
  const dayList = lastDays(days);
  const index = new Map(dayList.map((d, i) => [d, i]));
  const series = new Map<string, number[]>();
  for (const it of items) {
    const i = index.get(it.date);
    if (i === undefined) continue;
    const name = by(it);
    if (!series.has(name)) series.set(name, dayList.map(() => 0));
    const v = series.get(name)!;
    v[i] = sum([v[i], it.usage]);
  }
  return { days: dayList, series: [...series].map(([name, values]) => ({ name, values })) };
}

export interface Totals {
  name: string;
  usage: number;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
}

export function totalsBy(items: ActivityItem[], by: (i: ActivityItem) => string): Totals[] {
  const m = new Map<string, Totals>();
  for (const it of items) {
    const k = by(it);
    const t = m.get(k) ?? { name: k, usage: 0, requests: 0, prompt_tokens: 0, completion_tokens: 0 };
    t.usage = sum([t.usage, it.usage]);
    t.requests += it.requests;
    t.prompt_tokens += it.prompt_tokens;
    t.completion_tokens += it.completion_tokens;
    m.set(k, t);
  }
  return [...m.values()];
}

/** The activity of each of `ids` (keys or members, at most 50), one request each, every row named by its owner. */
export async function activityOf(api: Api, param: 'api_key_id' | 'user_id', ids: { id: string; name: string }[], days = 30): Promise<{ name: string; items: ActivityItem[] }[]> {
  return Promise.all(ids.slice(0, 50).map(async ({ id, name }) => ({ name, items: await activity(api, { days, [param]: id }) })));
}

/** Totals of each owner's activity, most spend first (an owner with none counts zero). */
export function totalsOf(owned: { name: string; items: ActivityItem[] }[]): Totals[] {
  return owned
    .map(({ name, items }) => totalsBy(items, () => name)[0] ?? { name, usage: 0, requests: 0, prompt_tokens: 0, completion_tokens: 0 })
    .sort((a, b) => b.usage - a.usage);
}

/** Spend over `days` of each of `ids` (keys or members), most first. */
export async function spendOf(api: Api, param: 'api_key_id' | 'user_id', ids: { id: string; name: string }[], days = 30): Promise<Totals[]> {
  return totalsOf(await activityOf(api, param, ids, days));
}
