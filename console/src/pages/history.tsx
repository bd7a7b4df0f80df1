import { useState } from 'preact/hooks';
import { qs } from '../api';
import { Link, Show, Table, useApp, useLoad } from '../app';
import { dateTime, money, ms, num } from '../format';
import { keys } from '../data';
import type { Key } from '../i18n';

interface HistoryItem {
  id: string;
  model: string;
  modelDisplayName: string;
  requestType: string;
  provider: string | null;
  status: 'completed' | 'failed' | 'pending';
  cost: string;
  usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
  generationTimeMs: number | null;
  createdAt: string;
  apiKeyName?: string;
  apiKeyShort?: string;
}

interface HistoryPageBody {
  items: HistoryItem[];
  meta: { page: number; limit: number; total: number; totalPages: number };
}

const LIMIT = 20;

export function HistoryPage() {
  const { api, t, lang } = useApp();
  const [filters, setFilters] = useState({ status: '', requestType: '', key: '', dateFrom: '', dateTo: '', sortBy: 'createdAt' });
  const [page, setPage] = useState(1);
  const [keyList] = useLoad(() => keys(api), []);
  const [state, reload] = useLoad(() => {
    const q = qs({
      page,
      limit: LIMIT,
      status: filters.status,
      requestType: filters.requestType,
      apiKeyId: filters.key && filters.key !== '-' ? filters.key : undefined,
      withoutApiKey: filters.key === '-' ? true : undefined,
      // Dates as the Moscow day they name, from its start to its end.
      dateFrom: filters.dateFrom ? `${filters.dateFrom}T00:00:00+03:00` : undefined,
      dateTo: filters.dateTo ? `${filters.dateTo}T23:59:59.999+03:00` : undefined,
      sortBy: filters.sortBy,
      sortOrder: 'desc',
    });
    return api.get<HistoryPageBody>(`/v1/history/generations${q}`);
  }, [page, filters]);

  return (
    <>
      <h1>{t('history.title')}</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          setPage(1);
          setFilters({
            status: String(f.get('status') ?? ''),
            requestType: String(f.get('requestType') ?? ''),
            key: String(f.get('key') ?? ''),
            dateFrom: String(f.get('dateFrom') ?? ''),
            dateTo: String(f.get('dateTo') ?? ''),
            sortBy: String(f.get('sortBy') ?? 'createdAt'),
          });
        }}
      >
        <label>
          {t('filter.status')}
          <select name="status">
            <option value="">{t('filter.all')}</option>
            {(['completed', 'failed', 'pending'] as const).map((s) => (
              <option value={s} key={s}>
                {t(`status.${s}`)}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t('filter.type')}
          <select name="requestType">
            <option value="">{t('filter.all')}</option>
            {['chat', 'image', 'video', 'audio'].map((s) => (
              <option value={s} key={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t('filter.key')}
          <select name="key">
            <option value="">{t('filter.all')}</option>
            <option value="-">{t('filter.noKey')}</option>
            {keyList.data?.map((k) => (
              <option value={k.id} key={k.id}>
                {k.name} ({k.label})
              </option>
            ))}
          </select>
        </label>
        <label>
          {t('filter.from')}
          <input type="date" name="dateFrom" />
        </label>
        <label>
          {t('filter.to')}
          <input type="date" name="dateTo" />
        </label>
        <label>
          {t('filter.sort')}
          <select name="sortBy">
            <option value="createdAt">{t('sort.createdAt')}</option>
            <option value="clientCost">{t('sort.clientCost')}</option>
          </select>
        </label>
        <button type="submit">{t('filter.apply')}</button>
      </form>
      <Show state={state} reload={reload}>
        {({ items, meta }) => (
          <section class="panel">
            <Table empty={items.length === 0}>
                  <thead>
                    <tr>
                      <th scope="col">{t('col.time')}</th>
                      <th scope="col">{t('col.model')}</th>
                      <th scope="col">{t('col.key')}</th>
                      <th scope="col">{t('col.status')}</th>
                      <th scope="col" class="num">{t('col.tokensIn')}</th>
                      <th scope="col" class="num">{t('col.tokensOut')}</th>
                      <th scope="col" class="num">{t('col.cost')}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {items.map((g) => (
                      <tr key={g.id} data-generation={g.id}>
                        <td>
                          <Link href={`/console/history/${encodeURIComponent(g.id)}`}>{dateTime(lang, g.createdAt)}</Link>
                        </td>
                        <td>{g.model}</td>
                        <td>{g.apiKeyName ? `${g.apiKeyName} …${g.apiKeyShort ?? ''}` : '—'}</td>
                        <td>
                          <span class={`status ${g.status}`}>{t(`status.${g.status}` as Key)}</span>
                        </td>
                        <td class="num">{num(lang, g.usage?.prompt_tokens)}</td>
                        <td class="num">{num(lang, g.usage?.completion_tokens)}</td>
                        <td class="num">{money(lang, g.cost)}</td>
                      </tr>
                    ))}
                  </tbody>
                </Table>
            <div class="pager">
              <button type="button" disabled={meta.page <= 1} onClick={() => setPage(meta.page - 1)}>
                {t('history.prev')}
              </button>
              <span>{t('history.page', { page: meta.page, pages: Math.max(1, meta.totalPages), total: meta.total })}</span>
              <button type="button" disabled={meta.page >= meta.totalPages} onClick={() => setPage(meta.page + 1)}>
                {t('history.next')}
              </button>
            </div>
          </section>
        )}
      </Show>
    </>
  );
}

interface Detail {
  id: string;
  apiKeyId: string | null;
  unifiedModelId: string;
  requestType: string;
  apiType: string;
  responseMode: string;
  status: string;
  finishReason: string | null;
  finalEndpointSlug: string | null;
  serviceTier?: string | null;
  usage: Record<string, unknown> | null;
  clientCost: string;
  generationTimeMs: number | null;
  latencyMs: number | null;
  queueTimeMs: number | null;
  isCancelled: boolean;
  createdAt: string;
  completedAt: string | null;
  attemptsCount: number;
  routing?: unknown;
  warnings?: string[];
  error?: unknown;
}

/** The text of a stored Responses answer: its output messages' text parts. */
function answerText(body: unknown): string | null {
  const output = (body as { output?: { type?: string; content?: { type?: string; text?: string }[] }[] })?.output;
  if (!Array.isArray(output)) return null;
  const parts = output.flatMap((o) => (o.type === 'message' && Array.isArray(o.content) ? o.content.filter((c) => typeof c.text === 'string').map((c) => c.text!) : []));
  return parts.length ? parts.join('\n') : null;
}

export function HistoryDetailPage({ id }: { id: string }) {
  const { api, t, lang } = useApp();
  const [state, reload] = useLoad(async () => {
    const d = await api.get<Detail>(`/v1/history/generations/${encodeURIComponent(id)}`);
    let answer: string | null = null;
    if (d.apiType === 'responses') answer = await api.get<unknown>(`/v1/responses/${encodeURIComponent(id)}`).then(answerText, () => null);
    return { d, answer };
  }, [id]);
  return (
    <>
      <p>
        <Link href="/console/history">← {t('history.back')}</Link>
      </p>
      <h1>
        {t('history.detail')} <code>{id}</code>
      </h1>
      <Show state={state} reload={reload}>
        {({ d, answer }) => (
          <>
            <section class="panel">
              <dl class="facts">
                <dt>{t('col.model')}</dt>
                <dd>{d.unifiedModelId}</dd>
                <dt>{t('col.status')}</dt>
                <dd>
                  {t(`status.${d.status}` as Key)}
                  {d.isCancelled ? ` · ${t('history.cancelled')}` : ''}
                  {d.finishReason ? ` · ${d.finishReason}` : ''}
                </dd>
                <dt>{t('col.type')}</dt>
                <dd>
                  {d.requestType} · {d.apiType} · {d.responseMode}
                  {d.serviceTier ? ` · ${d.serviceTier}` : ''}
                </dd>
                <dt>{t('col.cost')}</dt>
                <dd class="cost">{money(lang, d.clientCost)}</dd>
                <dt>{t('history.endpoint')}</dt>
                <dd>{d.finalEndpointSlug ?? '—'}</dd>
                <dt>{t('history.attemptsCount')}</dt>
                <dd>{d.attemptsCount}</dd>
                <dt>{t('col.created')}</dt>
                <dd>
                  {dateTime(lang, d.createdAt)} → {dateTime(lang, d.completedAt)}
                </dd>
              </dl>
            </section>
            <div class="two">
              <section class="panel">
                <h2>{t('history.timings')}</h2>
                <dl class="facts">
                  <dt>{t('history.queue')}</dt>
                  <dd>{ms(d.queueTimeMs)}</dd>
                  <dt>{t('history.latency')}</dt>
                  <dd>{ms(d.latencyMs)}</dd>
                  <dt>{t('history.generation')}</dt>
                  <dd>{ms(d.generationTimeMs)}</dd>
                </dl>
              </section>
              <section class="panel">
                <h2>{t('history.usage')}</h2>
                {d.usage ? (
                  <dl class="facts">
                    {Object.entries(d.usage).map(([k, v]) => (
                      <>
                        <dt key={`k${k}`}>{k}</dt>
                        <dd key={`v${k}`}>{typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd>
                      </>
                    ))}
                  </dl>
                ) : (
                  <p class="muted">—</p>
                )}
              </section>
            </div>
            <section class="panel">
              <h2>{t('history.attempts')}</h2>
              {d.routing ? <pre class="json">{JSON.stringify(d.routing, null, 2)}</pre> : <p class="muted">—</p>}
              {d.warnings && d.warnings.length > 0 && (
                <>
                  <h3>{t('history.warnings')}</h3>
                  <ul>
                    {d.warnings.map((w, i) => (
                      <li key={i}>{w}</li>
                    ))}
                  </ul>
                </>
              )}
              {d.error ? (
                <>
                  <h3>{t('history.error')}</h3>
                  <pre class="json">{JSON.stringify(d.error, null, 2)}</pre>
                </>
              ) : null}
            </section>
            <section class="panel">
              <h2>{t('history.answer')}</h2>
              {answer !== null ? <pre class="answer">{answer}</pre> : <p class="muted">{t('history.noAnswer')}</p>}
            </section>
          </>
        )}
      </Show>
    </>
  );
}
