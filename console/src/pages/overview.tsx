import { Show, useApp, useLoad } from '../app';
import { BarList, StackedBars } from '../charts';
import { activityDay, money, monthStart, sum, weekStart } from '../format';
import { activity, keys, members, seriesByDay, spendOf, type Balance } from '../data';

export function OverviewPage() {
  const { api, t, lang, session } = useApp();
  const manager = session?.user.role !== 'member';
  // The balance and the keys, and the activity (with each member's), load apart: one failing leaves the other shown.
  const [state, reload] = useLoad(async () => {
    const [balance, keyList] = await Promise.all([api.get<Balance>('/v2/balance'), keys(api)]);
    return { balance, keyList };
  }, []);
  const [spend, reloadSpend] = useLoad(async () => {
    const items = await activity(api, { days: 31 });
    const people = manager ? await members(api) : [];
    const topMembers = manager ? await spendOf(api, 'user_id', people.map((m) => ({ id: m.id, name: m.email }))) : [];
    return { items, topMembers };
  }, []);
  return (
    <>
      <h1>{t('overview.title')}</h1>
      <Show state={state} reload={reload}>
        {({ balance, keyList }) => {
          const today = activityDay(new Date());
          const items = spend.data?.items;
          const since = (from: string) => (items ? money(lang, sum(items.filter((i) => i.date >= from && i.date <= today).map((i) => i.usage))) : '…');
          const tiles: [string, string, string][] = [
            ['balance', t('balance.amount'), money(lang, balance.amount)],
            ['available', t('balance.available'), money(lang, balance.available)],
            ['reserved', t('balance.reserved'), money(lang, balance.reserved)],
            ['day', t('spent.day'), since(today)],
            ['week', t('spent.week'), since(weekStart(today))],
            ['month', t('spent.month'), since(monthStart(today))],
          ];
          const topKeys = [...keyList].sort((a, b) => b.usage - a.usage).slice(0, 5);
          return (
            <>
              <section class="tiles" aria-label={t('balance.amount')}>
                {tiles.map(([id, label, value]) => (
                  <div class="tile" key={id} data-tile={id}>
                    <div class="tile-label">{label}</div>
                    <div class="tile-value">{value}</div>
                  </div>
                ))}
              </section>
              <section class="panel">
                <Show state={spend} reload={reloadSpend}>
                  {({ items: all }) => {
                    const chart = seriesByDay(all, 30);
                    return <StackedBars days={chart.days} series={chart.series} label={t('chart.spend30')} />;
                  }}
                </Show>
              </section>
              <div class="two">
                <section class="panel">
                  <h2>{t('top.keys')}</h2>
                  <BarList label={t('top.keys')} rows={topKeys.map((k) => ({ name: k.name, value: k.usage }))} />
                  <p class="muted small">{t('col.usage')}</p>
                </section>
                {manager && (
                  <section class="panel">
                    <h2>{t('top.members')}</h2>
                    <Show state={spend} reload={reloadSpend}>
                      {({ topMembers }) => <BarList label={t('top.members')} rows={topMembers.slice(0, 5).map((m) => ({ name: m.name, value: m.usage }))} />}
                    </Show>
                    <p class="muted small">{t('col.spend30')}</p>
                  </section>
                )}
              </div>
            </>
          );
        }}
      </Show>
    </>
  );
}
