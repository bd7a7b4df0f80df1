import { render } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useState } from 'preact/hooks';
import { Api, ApiError, type SessionBody } from './api';
import { Ctx, Link, type AppCtx } from './app';
import type { Lang } from './format';
import { initialLang, translator, type Key } from './i18n';
import { PasswordPage, SignInPage } from './pages/auth';
import { OverviewPage } from './pages/overview';
import { ActivityPage } from './pages/activity';
import { HistoryDetailPage, HistoryPage } from './pages/history';
import { KeysPage } from './pages/keys';
import { MembersPage } from './pages/members';
import { BatchesPage } from './pages/batches';
import { FilesPage } from './pages/files';
import { PlaygroundPage } from './pages/playground';

const BASE = '/console';

const SECTIONS: { path: string; key: Key }[] = [
  { path: '', key: 'nav.overview' },
  { path: '/activity', key: 'nav.activity' },
  { path: '/history', key: 'nav.history' },
  { path: '/keys', key: 'nav.keys' },
  { path: '/members', key: 'nav.members' },
  { path: '/batches', key: 'nav.batches' },
  { path: '/files', key: 'nav.files' },
  { path: '/playground', key: 'nav.playground' },
];

function sub(pathname: string): string {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  return rest.replace(/\/+$/, '');
}

function App() {
  const api = useMemo(() => new Api(), []);
  const [lang, setLang] = useState<Lang>(initialLang);
  const [path, setPath] = useState(() => sub(location.pathname));
  const [session, setSessionState] = useState<SessionBody | null | undefined>(undefined);
  const t = useMemo(() => translator(lang), [lang]);

  const setSession = (s: SessionBody | null) => {
    api.csrf = s?.csrfToken ?? null;
    setSessionState(s);
  };
  const navigate = (to: string) => {
    if (to !== location.pathname + location.search) history.pushState(null, '', to);
    setPath(sub(new URL(to, location.href).pathname));
    window.scrollTo(0, 0);
  };

  useEffect(() => {
    const onPop = () => setPath(sub(location.pathname));
    addEventListener('popstate', onPop);
    api.onUnauthorized = () => setSession(null);
    api.json<SessionBody>('GET', '/v1/auth/session').then(setSession, (e: unknown) => {
      if (!(e instanceof ApiError)) console.warn(e);
      setSession(null);
    });
    return () => removeEventListener('popstate', onPop);
  }, []);

  // A layout effect: the page's language changes in the same commit as its words (Preact runs plain effects after a
  // paint, which a busy or hidden tab can put off).
  useLayoutEffect(() => {
    document.documentElement.lang = lang;
    try {
      localStorage.setItem('sy_lang', lang);
    } catch {
      /* storage refused */
    }
  }, [lang]);

  const ctx: AppCtx = { api, t, lang, session: session ?? null, setSession, navigate };
  const switchLang = (
    <button type="button" class="lang" lang={lang === 'ru' ? 'en' : 'ru'} onClick={() => setLang(lang === 'ru' ? 'en' : 'ru')}>
      {t('lang.switch')}
    </button>
  );

  let body;
  if (path === '/invite' || path === '/reset') {
    body = <PasswordPage kind={path === '/invite' ? 'invite' : 'reset'} langSwitch={switchLang} />;
  } else if (session === undefined) {
    body = <p class="muted center">{t('loading')}</p>;
  } else if (session === null) {
    body = <SignInPage langSwitch={switchLang} />;
  } else {
    const section = SECTIONS.find((s) => s.path === path || (s.path && path.startsWith(s.path + '/')));
    document.title = `${t(section?.key ?? 'nav.overview')} · ${t('brand')}`;
    body = (
      <div class="shell">
        <header class="top">
          <Link href={BASE} class="brand">
            {t('brand')} <span class="muted">{t('console')}</span>
          </Link>
          <div class="who">
            <span class="org">{session.organization.name}</span>
            <span class="me">
              {session.user.email} · {t(`role.${session.user.role}` as Key)}
            </span>
            {switchLang}
            <button
              type="button"
              onClick={async () => {
                try {
                  await api.json('POST', '/v1/auth/logout');
                } finally {
                  setSession(null);
                  navigate(BASE);
                }
              }}
            >
              {t('signOut')}
            </button>
          </div>
        </header>
        <nav class="side" aria-label={t('nav.label')}>
          <ul>
            {SECTIONS.map((s) => (
              <li key={s.path}>
                <Link href={BASE + s.path} current={section?.path === s.path}>
                  {t(s.key)}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main">
          <Page path={path} />
        </main>
      </div>
    );
  }
  return <Ctx.Provider value={ctx}>{body}</Ctx.Provider>;
}

function Page({ path }: { path: string }) {
  if (path.startsWith('/history/')) return <HistoryDetailPage id={decodeURIComponent(path.slice('/history/'.length))} />;
  switch (path) {
    case '/activity':
      return <ActivityPage />;
    case '/history':
      return <HistoryPage />;
    case '/keys':
      return <KeysPage />;
    case '/members':
      return <MembersPage />;
    case '/batches':
      return <BatchesPage />;
    case '/files':
      return <FilesPage />;
    case '/playground':
      return <PlaygroundPage />;
    default:
      return <OverviewPage />;
  }
}

render(<App />, document.getElementById('app')!);
