import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, type SessionBody } from '../api';
import { ErrorLine, useApp } from '../app';

function Card({ title, lead, children, langSwitch }: { title: string; lead?: string; children: ComponentChildren; langSwitch: ComponentChildren }) {
  const { t } = useApp();
  return (
    <main class="auth" id="main">
      <div class="auth-card">
        <div class="auth-top">
          <span class="brand">{t('brand')}</span>
          {langSwitch}
        </div>
        <h1>{title}</h1>
        {lead && <p class="muted">{lead}</p>}
        {children}
      </div>
    </main>
  );
}

export function SignInPage({ langSwitch }: { langSwitch: ComponentChildren }) {
  const { api, t, setSession } = useApp();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  document.title = `${t('signin.title')} · ${t('brand')}`;
  return (
    <Card title={t('signin.title')} langSwitch={langSwitch}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          setBusy(true);
          setError(null);
          try {
            setSession(await api.json<SessionBody>('POST', '/v1/auth/login', { email: f.get('email'), password: f.get('password') }));
          } catch (err) {
            setError(err instanceof ApiError && err.status === 429 ? t('signin.throttled') : err instanceof ApiError && err.status === 401 ? t('signin.failed') : (err as Error).message);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label>
          {t('signin.email')}
          <input name="email" type="email" autocomplete="username" required />
        </label>
        <label>
          {t('signin.password')}
          <input name="password" type="password" autocomplete="current-password" required />
        </label>
        <ErrorLine error={error} />
        <button type="submit" class="primary" disabled={busy}>
          {t('signin.submit')}
        </button>
      </form>
    </Card>
  );
}

/** The token of an invite or reset link: in the fragment (`#token=...` or `#...`), so no server ever sees it. */
function fragmentToken(): string | null {
  const h = location.hash.replace(/^#/, '');
  if (!h) return null;
  const p = new URLSearchParams(h);
  return p.get('token') ?? (h.includes('=') ? null : decodeURIComponent(h));
}

export function PasswordPage({ kind, langSwitch }: { kind: 'invite' | 'reset'; langSwitch: ComponentChildren }) {
  const { api, t, setSession, navigate } = useApp();
  const [token] = useState(fragmentToken);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const title = t(kind === 'invite' ? 'invite.title' : 'reset.title');
  document.title = `${title} · ${t('brand')}`;
  if (!token) {
    return (
      <Card title={title} langSwitch={langSwitch}>
        <p class="error" role="alert">{t('token.missing')}</p>
      </Card>
    );
  }
  return (
    <Card title={title} lead={t(kind === 'invite' ? 'invite.lead' : 'reset.lead')} langSwitch={langSwitch}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          const password = String(f.get('password') ?? '');
          if (password !== f.get('repeat')) return setError(t('pw.mismatch'));
          if (password.length < 10 || password.length > 256) return setError(t('pw.short'));
          setBusy(true);
          setError(null);
          try {
            const s = await api.json<SessionBody>('POST', `/v1/auth/${kind}`, { token, password });
            // The token leaves the address bar and the history entry.
            history.replaceState(null, '', '/console');
            setSession(s);
            navigate('/console');
          } catch (err) {
            setError(err instanceof ApiError && err.status === 401 ? t('token.bad') : (err as Error).message);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label>
          {t('pw.new')}
          <input name="password" type="password" autocomplete="new-password" minLength={10} maxLength={256} required />
        </label>
        <label>
          {t('pw.repeat')}
          <input name="repeat" type="password" autocomplete="new-password" minLength={10} maxLength={256} required />
        </label>
        <ErrorLine error={error} />
        <button type="submit" class="primary" disabled={busy}>
          {t('pw.submit')}
        </button>
      </form>
    </Card>
  );
}
