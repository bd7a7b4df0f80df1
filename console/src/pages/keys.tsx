import { useState } from 'preact/hooks';
import { ErrorLine, PeriodOptions, Show, ShownOnce, Table, useApp, useLoad } from '../app';
import { dateTime, money, num } from '../format';
import { keys, type KeyView } from '../data';
import type { Key } from '../i18n';

export function KeysPage() {
  const { api, t, lang } = useApp();
  const [state, reload] = useLoad(() => keys(api), []);
  const [models] = useLoad(() => api.get<{ data: { id: string }[] }>('/v1/models').then((r) => r.data.map((m) => m.id)), []);
  const [created, setCreated] = useState<(KeyView & { key: string }) | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  return (
    <>
      <h1>{t('keys.title')}</h1>
      <section class="panel">
        <h2>{t('keys.create')}</h2>
        {created ? (
          <ShownOnce message={t('keys.once')} value={created.key} label={created.name} id="new-key">
            <button type="button" onClick={() => setCreated(null)}>
              {t('keys.done')}
            </button>
          </ShownOnce>
        ) : (
          <form
            class="grid-form"
            onSubmit={async (e) => {
              e.preventDefault();
              const form = e.currentTarget;
              const f = new FormData(form);
              const limit = String(f.get('limit') ?? '').trim();
              const rate = String(f.get('rate') ?? '').trim();
              const chosen = f.getAll('models').map(String);
              setBusy(true);
              setError(null);
              try {
                const body: Record<string, unknown> = { name: String(f.get('name') ?? '') };
                if (limit) {
                  body.limit = Number(limit);
                  body.limit_reset = String(f.get('period'));
                }
                if (chosen.length) body.allowed_models = chosen;
                if (rate) body.rate_limit_per_minute = Number(rate);
                setCreated(await api.json<KeyView & { key: string }>('POST', '/v1/keys', body));
                form.reset();
                reload();
              } catch (err) {
                setError((err as Error).message);
              } finally {
                setBusy(false);
              }
            }}
          >
            <label>
              {t('keys.name')}
              <input name="name" required maxLength={100} />
            </label>
            <label>
              {t('keys.limit')}
              <input name="limit" type="number" min="0" step="0.01" inputMode="decimal" />
            </label>
            <label>
              {t('keys.reset')}
              <select name="period">
                <PeriodOptions />
              </select>
            </label>
            <label>
              {t('keys.rate')}
              <input name="rate" type="number" min="1" step="1" />
            </label>
            <label class="wide">
              {t('keys.models')}
              <select name="models" multiple size={4}>
                {models.data?.map((m) => (
                  <option value={m} key={m}>
                    {m}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" class="primary" disabled={busy}>
              {t('keys.submit')}
            </button>
          </form>
        )}
        <ErrorLine error={error} />
      </section>
      <Show state={state} reload={reload}>
        {(list) => (
          <section class="panel">
            <Table empty={list.length === 0}>
                  <thead>
                    <tr>
                      <th scope="col">{t('col.name')}</th>
                      <th scope="col">{t('col.key')}</th>
                      <th scope="col" class="num">{t('col.usage')}</th>
                      <th scope="col" class="num">{t('col.limit')}</th>
                      <th scope="col" class="num">{t('col.remaining')}</th>
                      <th scope="col">{t('col.reset')}</th>
                      <th scope="col">{t('col.models')}</th>
                      <th scope="col" class="num">{t('col.rate')}</th>
                      <th scope="col">{t('col.status')}</th>
                      <th scope="col">{t('col.created')}</th>
                      <th scope="col">{t('col.actions')}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((k) => (
                      <tr key={k.id} data-key={k.id}>
                        <th scope="row" class="key-name">{k.name}</th>
                        <td>
                          <code>{k.label}</code>
                        </td>
                        <td class="num key-usage">{money(lang, k.usage)}</td>
                        <td class="num">{money(lang, k.limit)}</td>
                        <td class="num">{money(lang, k.limit_remaining)}</td>
                        <td>{k.limit_reset ? t(`reset.${k.limit_reset}` as Key) : '—'}</td>
                        <td>{k.allowed_models?.length ? k.allowed_models.join(', ') : t('keys.allModels')}</td>
                        <td class="num">{num(lang, k.rate_limit_per_minute)}</td>
                        <td>{k.revoked ? t('keys.revoked') : k.disabled ? t('keys.disabled') : t('keys.active')}</td>
                        <td>{dateTime(lang, k.created_at)}</td>
                        <td>
                          {!k.revoked && (
                            <button
                              type="button"
                              class="danger"
                              aria-label={`${t('keys.revoke')}: ${k.name}`}
                              onClick={async () => {
                                if (!confirm(t('keys.revokeConfirm', { name: k.name }))) return;
                                try {
                                  await api.json('DELETE', `/v1/keys/${encodeURIComponent(k.id)}`);
                                } catch (err) {
                                  alert((err as Error).message);
                                }
                                reload();
                              }}
                            >
                              {t('keys.revoke')}
                            </button>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </Table>
          </section>
        )}
      </Show>
    </>
  );
}
