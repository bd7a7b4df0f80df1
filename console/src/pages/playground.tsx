import { useRef, useState } from 'preact/hooks';
import { ErrorLine, Show, useApp, useLoad } from '../app';
import { money, num } from '../format';
import type { Balance } from '../data';

interface Outcome {
  cost: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  before: string;
  after: string | null;
}

/** Reads an SSE body: calls `onEvent` with each `data:` payload (without the `[DONE]` sentinel). */
async function readSse(body: ReadableStream<Uint8Array>, onEvent: (data: string) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n/g, '\n');
    let at: number;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const data = event
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (data && data !== '[DONE]') onEvent(data);
    }
  }
}

export function PlaygroundPage() {
  const { api, t, lang } = useApp();
  const [models] = useLoad(() => api.get<{ data: { id: string }[] }>('/v1/models').then((r) => r.data.map((m) => m.id)), []);
  const [reply, setReply] = useState('');
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [streaming, setStreaming] = useState(false);
  const abort = useRef<AbortController | null>(null);

  return (
    <>
      <h1>{t('play.title')}</h1>
      <Show state={models}>
        {(list) => (
          <section class="panel">
            <form
              class="play"
              onSubmit={async (e) => {
                e.preventDefault();
                const f = new FormData(e.currentTarget);
                setReply('');
                setOutcome(null);
                setError(null);
                setStreaming(true);
                const controller = new AbortController();
                abort.current = controller;
                let before = '';
                try {
                  before = (await api.get<Balance>('/v2/balance')).available;
                  const res = await api.raw(
                    'POST',
                    '/v1/chat/completions',
                    { model: f.get('model'), stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: String(f.get('prompt') ?? '') }] },
                    { Accept: 'text/event-stream' },
                    controller.signal,
                  );
                  const o: Outcome = { cost: null, promptTokens: null, completionTokens: null, before, after: null };
                  let text = '';
                  await readSse(res.body!, (data) => {
                    const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string } }[]; usage?: { cost?: number; prompt_tokens?: number; completion_tokens?: number } | null; error?: { message?: string } };
                    if (chunk.error) setError(chunk.error.message ?? 'error');
                    const piece = chunk.choices?.[0]?.delta?.content;
                    if (piece) {
                      text += piece;
                      setReply(text);
                    }
                    if (chunk.usage) {
                      o.cost = chunk.usage.cost ?? null;
                      o.promptTokens = chunk.usage.prompt_tokens ?? null;
                      o.completionTokens = chunk.usage.completion_tokens ?? null;
                    }
                  });
                  o.after = (await api.get<Balance>('/v2/balance')).available;
                  setOutcome(o);
                } catch (err) {
                  if (!controller.signal.aborted) setError((err as Error).message);
                  // Stopped: what was delivered is charged; the balance after shows it.
                  else setOutcome({ cost: null, promptTokens: null, completionTokens: null, before, after: (await api.get<Balance>('/v2/balance').catch(() => null))?.available ?? null });
                } finally {
                  setStreaming(false);
                }
              }}
            >
              <label>
                {t('play.model')}
                <select name="model">
                  {list.map((m) => (
                    <option value={m} key={m}>
                      {m}
                    </option>
                  ))}
                </select>
              </label>
              <label>
                {t('play.prompt')}
                <textarea name="prompt" rows={4} required />
              </label>
              <div class="row">
                <button type="submit" class="primary" disabled={streaming}>
                  {t('play.send')}
                </button>
                {streaming && (
                  <button type="button" onClick={() => abort.current?.abort()}>
                    {t('play.stop')}
                  </button>
                )}
              </div>
            </form>
            <ErrorLine error={error} />
            <h2>{t('play.reply')}</h2>
            <div class="reply" aria-live="polite" aria-busy={streaming}>
              {reply || (streaming ? t('play.streaming') : '')}
            </div>
            {outcome && (
              <dl class="facts outcome">
                <dt>{t('play.cost')}</dt>
                <dd class="play-cost">{money(lang, outcome.cost)}</dd>
                <dt>{t('play.tokens')}</dt>
                <dd>
                  {num(lang, outcome.promptTokens)} → {num(lang, outcome.completionTokens)}
                </dd>
                <dt>{t('play.before')}</dt>
                <dd>{money(lang, outcome.before)}</dd>
                <dt>{t('play.after')}</dt>
                <dd class="play-after">{money(lang, outcome.after)}</dd>
              </dl>
            )}
          </section>
        )}
      </Show>
    </>
  );
}
