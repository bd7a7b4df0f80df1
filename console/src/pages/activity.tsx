import { useState } from 'preact/hooks';
import { Show, Table, useApp, useLoad } from '../app';
import { StackedBars } from '../charts';
import { csvCell, download, money, num } from '../format';
import { activity, activityOf, keys, members, seriesByDay, totalsBy, totalsOf, type ActivityItem, type Totals } from '../data';
import type { Key } from '../i18n';

const COLUMNS: (keyof ActivityItem)[] = ['date', 'model', 'provider_name', 'endpoint_id', 'usage', 'requests', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens'];

export function ActivityPage() {
  const { api, t, session } = useApp();
  const manager = session?.user.role !== 'member';
  const [days, setDays] = useState(30);
  const [keyId, setKeyId] = useState('');
  const [userId, setUserId] = useState('');
  const [group, setGroup] = useState<'model' | 'key' | 'member'>('model');
  const [lists] = useLoad(async () => ({ keys: await keys(api), members: manager ? await members(api).catch(() => []) : [] }), []);
  const [state, reload] = useLoad(async () => {
    const items = await activity(api, { days, api_key_id: keyId || undefined, user_id: userId || undefined });
    const ks = lists.data?.keys ?? (await keys(api));
    const ms = lists.data?.members ?? [];
    const byKey = keyId ? [] : await activityOf(api, 'api_key_id', ks.map((k) => ({ id: k.id, name: k.name })), days);
    const byMember = userId || !manager ? [] : await activityOf(api, 'user_id', ms.map((m) => ({ id: m.id, name: m.email })), days);
    return { items, byKey, byMember };
  }, [days, keyId, userId, lists.data]);

  return (
    <>
      <h1>{t('activity.title')}</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          {t('activity.days')}
          <select value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
            {[7, 30, 90].map((n) => (
              <option value={String(n)} key={n}>
                {t('days.n', { n })}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t('filter.key')}
          <select value={keyId} onChange={(e) => setKeyId(e.currentTarget.value)}>
            <option value="">{t('filter.all')}</option>
            {lists.data?.keys.map((k) => (
              <option value={k.id} key={k.id}>
                {k.name} ({k.label})
              </option>
            ))}
          </select>
        </label>
        <label>
          {t('activity.chartBy')}
          <select value={group} onChange={(e) => setGroup(e.currentTarget.value as 'model' | 'key' | 'member')}>
            {(['model', 'key', 'member'] as const)
              .filter((g) => g !== 'member' || manager)
              .map((g) => (
                <option value={g} key={g}>
                  {t(`col.${g}` as Key)}
                </option>
              ))}
          </select>
        </label>
        {manager && (
          <label>
            {t('filter.member')}
            <select value={userId} onChange={(e) => setUserId(e.currentTarget.value)}>
              <option value="">{t('filter.all')}</option>
              {lists.data?.members.map((m) => (
                <option value={m.id} key={m.id}>
                  {m.email}
                </option>
              ))}
            </select>
          </label>
        )}
      </form>
      <Show state={state} reload={reload}>
        {({ items, byKey, byMember }) => {
          // The chart stacks by model from the rows, or by key or member from each one's own rows.
          const owned = group === 'key' ? byKey : group === 'member' ? byMember : null;
          const chart = owned ? seriesByDay(owned.flatMap((o) => o.items.map((i) => ({ ...i, model: o.name }))), days) : seriesByDay(items, days);
          const chartTitle = t(group === 'key' ? 'activity.byKey' : group === 'member' ? 'activity.byMember' : 'activity.byModel');
          const byDay = totalsBy(items, (i) => i.date).sort((a, b) => (a.name < b.name ? 1 : -1));
          const byModel = totalsBy(items, (i) => i.model).sort((a, b) => b.usage - a.usage);
          return (
            <>
              <section class="panel">
                <StackedBars days={chart.days} series={chart.series} label={`${chartTitle} · ${t('days.n', { n: days })}`} />
                <button
                  type="button"
                  onClick={() => {
                    const lines = [COLUMNS.join(','), ...items.map((i) => COLUMNS.map((c) => csvCell(i[c])).join(','))];
                    download(`activity-${days}d.csv`, new Blob([lines.join('\r\n') + '\r\n'], { type: 'text/csv' }));
                  }}
                >
                  {t('activity.csv')}
                </button>
              </section>
              <TotalsTable caption={t('activity.byDay')} first={t('col.day')} rows={byDay} />
              <TotalsTable caption={t('activity.byModel')} first={t('col.model')} rows={byModel} />
              {!keyId && <TotalsTable caption={t('activity.byKey')} first={t('col.key')} rows={totalsOf(byKey)} />}
              {manager && !userId && <TotalsTable caption={t('activity.byMember')} first={t('col.member')} rows={totalsOf(byMember)} />}
            </>
          );
        }}
      </Show>
    </>
  );
}

/** Spend, requests and tokens per row (day, model, key or member). */
function TotalsTable({ caption, first, rows }: { caption: string; first: string; rows: Totals[] }) {
  const { t, lang } = useApp();
  return (
    <section class="panel">
      <h2>{caption}</h2>
      <Table empty={rows.length === 0}>
            <thead>
              <tr>
                <th scope="col">{first}</th>
                <th scope="col" class="num">{t('col.spend')}</th>
                <th scope="col" class="num">{t('col.requests')}</th>
                <th scope="col" class="num">{t('col.tokensIn')}</th>
                <th scope="col" class="num">{t('col.tokensOut')}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.name}>
                  <th scope="row">{r.name}</th>
                  <td class="num">{money(lang, r.usage)}</td>
                  <td class="num">{num(lang, r.requests)}</td>
                  <td class="num">{num(lang, r.prompt_tokens)}</td>
                  <td class="num">{num(lang, r.completion_tokens)}</td>
                </tr>
              ))}
            </tbody>
          </Table>
    </section>
  );
}
