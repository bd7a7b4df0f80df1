import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import type { Api, SessionBody } from './api';
import type { Lang } from './format';
import type { T } from './i18n';

export interface AppCtx {
  api: Api;
  t: T;
  lang: Lang;
  session: SessionBody | null;
  setSession: (s: SessionBody | null) => void;
  navigate: (path: string) => void;
}

export const Ctx = createContext<AppCtx>(null as unknown as AppCtx);
export const useApp = () => useContext(Ctx);

export type Loaded<V> = { loading: true; error?: undefined; data?: undefined } | { loading: false; error: Error; data?: undefined } | { loading: false; error?: undefined; data: V };

/** Loads `fn` when `deps` change; `reload` loads again (after a change the page made). The last load started wins. */
export function useLoad<V>(fn: () => Promise<V>, deps: unknown[]): [Loaded<V>, () => void] {
  const [state, setState] = useState<Loaded<V>>({ loading: true });
  const latest = useRef(fn);
  latest.current = fn;
  const seq = useRef(0);
  const load = useCallback(() => {
    const mine = ++seq.current;
    latest.current().then(
      (data) => mine === seq.current && setState({ loading: false, data }),
      (error: Error) => mine === seq.current && setState({ loading: false, error }),
    );
  }, []);
  useEffect(() => {
    setState((s) => (s.data !== undefined ? s : { loading: true }));
    load();
    return () => {
      seq.current++;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  return [state, load];
}

/** A loaded value, or the loading line, or the error with a retry. */
export function Show<V>({ state, reload, children }: { state: Loaded<V>; reload?: () => void; children: (v: V) => ComponentChildren }) {
  const { t } = useApp();
  if (state.error) {
    return (
      <p class="error" role="alert">
        {t('error')}: {state.error.message} {reload && <button type="button" class="link" onClick={reload}>{t('retry')}</button>}
      </p>
    );
  }
  if (state.data === undefined) return <p class="muted" aria-busy="true">{t('loading')}</p>;
  return <>{children(state.data)}</>;
}

export function ErrorLine({ error }: { error: string | null }) {
  return error ? <p class="error" role="alert">{error}</p> : null;
}

export function Link({ href, children, class: cls, current }: { href: string; children: ComponentChildren; class?: string; current?: boolean }) {
  const { navigate } = useApp();
  return (
    <a
      href={href}
      class={cls}
      aria-current={current ? 'page' : undefined}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}

/** Copies `text` and says so on the button for a moment; where the clipboard is refused, selects it in `inputId`. */
export function CopyButton({ text, inputId, label }: { text: string; inputId: string; label?: string }) {
  const { t } = useApp();
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
        } catch {
          const el = document.getElementById(inputId) as HTMLInputElement | null;
          el?.select();
        }
        setDone(true);
        setTimeout(() => setDone(false), 2000);
      }}
    >
      {done ? t('keys.copied') : label ?? t('keys.copy')}
    </button>
  );
}

export const PERIODS = ['daily', 'weekly', 'monthly', 'never'] as const;

/** The options of a limit's reset period (keys, members). */
export function PeriodOptions() {
  const { t } = useApp();
  return (
    <>
      {PERIODS.map((r) => (
        <option value={r} key={r}>
          {t(`reset.${r}`)}
        </option>
      ))}
    </>
  );
}

/** A table in a panel that scrolls sideways on a narrow screen, or "Nothing here yet." when it has no rows. */
export function Table({ empty, children }: { empty: boolean; children: ComponentChildren }) {
  const { t } = useApp();
  if (empty) return <p class="muted">{t('none')}</p>;
  return (
    <div class="scroll">
      <table>{children}</table>
    </div>
  );
}

/** A secret shown once (a new key, an invite link): the message, the value to copy, and what else the caller adds. */
export function ShownOnce({ message, value, label, id, children }: { message: string; value: string; label: string; id: string; children?: ComponentChildren }) {
  return (
    <div class="once" role="status">
      <p>{message}</p>
      <div class="row">
        <input id={id} class="secret" readOnly value={value} aria-label={label} />
        <CopyButton text={value} inputId={id} />
        {children}
      </div>
    </div>
  );
}
