import { useEffect, useState } from 'preact/hooks';
import { ErrorLine, PeriodOptions, Show, ShownOnce, useApp, useLoad } from '../app';
import { dateTime, money } from '../format';
import { members, type Member } from '../data';
import type { Key } from '../i18n';

export function MembersPage() {
  const { api, t, session } = useApp();
  const role = session?.user.role ?? 'member';
  const [state, reload] = useLoad(() => members(api), []);
  const [invited, setInvited] = useState<{ email: string; inviteUrl: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const grantable = role === 'owner' ? (['owner', 'admin', 'member'] as const) : (['admin', 'member'] as const);

  return (
    <>
      <h1>{t('members.title')}</h1>
      {role !== 'member' && (
        <section class="panel">
          <h2>{t('members.invite')}</h2>
          {invited && (
            <ShownOnce message={t('members.link', { email: invited.email })} value={invited.inviteUrl} label={invited.email} id="invite-url" />
          )}
          <form
            class="grid-form"
            onSubmit={async (e) => {
              e.preventDefault();
              const form = e.currentTarget;
              const f = new FormData(form);
              const limit = String(f.get('limit') ?? '').trim();
              setError(null);
              try {
                const body: Record<string, unknown> = { email: f.get('email'), role: f.get('role') };
                if (limit) {
                  body.limit = Number(limit);
                  body.limit_reset = f.get('period');
                }
                const m = await api.json<Member & { inviteUrl: string }>('POST', '/v1/members', body);
                setInvited({ email: m.email, inviteUrl: m.inviteUrl });
                form.reset();
                reload();
              } catch (err) {
                setError((err as Error).message);
              }
            }}
          >
            <label>
              {t('members.email')}
              <input name="email" type="email" required />
            </label>
            <label>
              {t('members.role')}
              <select name="role">
                {grantable.map((r) => (
                  <option value={r} key={r} selected={r === 'member'}>
                    {t(`role.${r}`)}
                  </option>
                ))}
              </select>
            </label>
            <label>
              {t('members.limit')}
              <input name="limit" type="number" min="0" step="0.01" />
            </label>
            <label>
              {t('keys.reset')}
              <select name="period">
                <PeriodOptions />
              </select>
            </label>
            <ErrorLine error={error} />
            <button type="submit" class="primary">
              {t('members.submit')}
            </button>
          </form>
        </section>
      )}
      <Show state={state} reload={reload}>
        {(list) => (
          <section class="panel">
            <div class="scroll">
              <table class="members">
                <thead>
                  <tr>
                    <th scope="col">{t('col.email')}</th>
                    <th scope="col">{t('col.role')}</th>
                    <th scope="col">{t('col.status')}</th>
                    <th scope="col">{t('col.limit')}</th>
                    <th scope="col" class="num">{t('col.remaining')}</th>
                    <th scope="col">{t('col.created')}</th>
                    {role !== 'member' && <th scope="col">{t('col.actions')}</th>}
                  </tr>
                </thead>
                <tbody>
                  {list.map((m) => (
                    <MemberRow key={m.id} m={m} role={role} grantable={grantable} reload={reload} />
                  ))}
                </tbody>
              </table>
            </div>
          </section>
        )}
      </Show>
    </>
  );
}

/** A member's row; for those the viewer may change, its role and limit fields and Save and Remove. */
function MemberRow({ m, role, grantable, reload }: { m: Member; role: Member['role']; grantable: readonly Member['role'][]; reload: () => void }) {
  const { api, t, lang, session } = useApp();
  const self = m.id === session?.user.id;
  const editable = role !== 'member' && !self && !(role === 'admin' && m.role === 'owner');
  const [rowError, setRowError] = useState<string | null>(null);
  // The row's fields, held as state from what the API answered (a select's default is no attribute Preact sets).
  const [newRole, setNewRole] = useState<Member['role']>(m.role);
  const [limit, setLimit] = useState(m.limit === null ? '' : String(m.limit));
  const [period, setPeriod] = useState(m.limitReset ?? 'monthly');
  useEffect(() => {
    setNewRole(m.role);
    setLimit(m.limit === null ? '' : String(m.limit));
    setPeriod(m.limitReset ?? 'monthly');
  }, [m.role, m.limit, m.limitReset]);
  return (
    <tr data-member={m.email}>
      <th scope="row">
        {m.email} {self && <span class="muted">{t('members.you')}</span>}
        {rowError && (
          <span class="error" role="alert">
            {' '}
            {rowError}
          </span>
        )}
      </th>
      <td>
        {editable ? (
          <select name="role" aria-label={`${t('col.role')}: ${m.email}`} value={newRole} onChange={(e) => setNewRole(e.currentTarget.value as Member['role'])}>
            {grantable.map((r) => (
              <option value={r} key={r}>
                {t(`role.${r}`)}
              </option>
            ))}
          </select>
        ) : (
          t(`role.${m.role}` as Key)
        )}
      </td>
      <td>{t(m.status === 'active' ? 'members.active' : 'members.invited')}</td>
      <td>
        {editable ? (
          <span class="row">
            <input name="limit" type="number" min="0" step="0.01" value={limit} onInput={(e) => setLimit(e.currentTarget.value)} aria-label={`${t('col.limit')}: ${m.email}`} class="short" />
            <select name="period" value={period} onChange={(e) => setPeriod(e.currentTarget.value)} aria-label={`${t('col.reset')}: ${m.email}`}>
              <PeriodOptions />
            </select>
          </span>
        ) : (
          `${money(lang, m.limit)}${m.limitReset ? ` · ${t(`reset.${m.limitReset}` as Key)}` : ''}`
        )}
      </td>
      <td class="num">{money(lang, m.limitRemaining)}</td>
      <td>{dateTime(lang, m.createdAt)}</td>
      {role !== 'member' && (
        <td>
          {editable && (
            <form
              class="row"
              onSubmit={async (e) => {
                e.preventDefault();
                const amount = limit.trim();
                const body: Record<string, unknown> = { limit: amount ? Number(amount) : null };
                if (amount) body.limit_reset = period;
                if (newRole !== m.role) body.role = newRole;
                try {
                  await api.json('PATCH', `/v1/members/${encodeURIComponent(m.id)}`, body);
                  reload();
                } catch (err) {
                  setRowError((err as Error).message);
                }
              }}
            >
              <button type="submit">{t('members.save')}</button>
              <button
                type="button"
                class="danger"
                onClick={async () => {
                  if (!confirm(t('members.removeConfirm', { email: m.email }))) return;
                  try {
                    await api.json('DELETE', `/v1/members/${encodeURIComponent(m.id)}`);
                    reload();
                  } catch (err) {
                    setRowError((err as Error).message);
                  }
                }}
              >
                {t('members.remove')}
              </button>
            </form>
          )}
        </td>
      )}
    </tr>
  );
}
