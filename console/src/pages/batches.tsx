import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';
import { ErrorLine, Show, Table, useApp, useLoad } from '../app';
import { dateTime, download, num } from '../format';

interface Batch {
  id: string;
  endpoint: string;
  status: string;
  input_file_id: string;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  request_counts: { total: number; completed: number; failed: number };
}

const RUNNING = new Set(['validating', 'in_progress', 'finalizing', 'cancelling']);

export async function downloadFile(api: Api, id: string, name: string): Promise<void> {
  const res = await api.raw('GET', `/v1/files/${encodeURIComponent(id)}/content`);
  download(name, await res.blob());
}

export function BatchesPage() {
  const { api, t, lang } = useApp();
  const [state, reload] = useLoad(() => api.get<{ data: Batch[] }>('/v1/batches?limit=50').then((r) => r.data), []);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const running = state.data?.some((b) => RUNNING.has(b.status)) ?? false;
  // While a batch runs its progress is read again every few seconds.
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(reload, 3000);
    return () => clearInterval(timer);
  }, [running]);

  return (
    <>
      <h1>{t('batches.title')}</h1>
      <section class="panel">
        <h2>{t('batches.upload')}</h2>
        <form
          class="grid-form"
          onSubmit={async (e) => {
            e.preventDefault();
            const form = e.currentTarget;
            const f = new FormData(form);
            const file = f.get('file');
            if (!(file instanceof File) || !file.size) return;
            setBusy(true);
            setError(null);
            try {
              const upload = new FormData();
              upload.set('purpose', 'batch');
              upload.set('file', file, file.name);
              const uploaded = await api.json<{ id: string }>('POST', '/v1/files', upload);
              await api.json('POST', '/v1/batches', { input_file_id: uploaded.id, endpoint: f.get('endpoint'), completion_window: '24h' });
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
            {t('batches.file')}
            <input name="file" type="file" accept=".jsonl,application/jsonl,application/x-ndjson" required />
          </label>
          <label>
            {t('batches.endpoint')}
            <select name="endpoint">
              {['/v1/chat/completions', '/v1/responses', '/v1/embeddings'].map((e) => (
                <option value={e} key={e}>
                  {e}
                </option>
              ))}
            </select>
          </label>
          <ErrorLine error={error} />
          <button type="submit" class="primary" disabled={busy}>
            {t('batches.submit')}
          </button>
        </form>
      </section>
      <Show state={state} reload={reload}>
        {(list) => (
          <section class="panel">
            <Table empty={list.length === 0}>
                  <thead>
                    <tr>
                      <th scope="col">ID</th>
                      <th scope="col">{t('col.endpoint')}</th>
                      <th scope="col">{t('col.status')}</th>
                      <th scope="col">{t('col.progress')}</th>
                      <th scope="col">{t('col.created')}</th>
                      <th scope="col">{t('col.actions')}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((b) => {
                      const c = b.request_counts ?? { total: 0, completed: 0, failed: 0 };
                      const done = c.completed + c.failed;
                      return (
                        <tr key={b.id} data-batch={b.id}>
                          <th scope="row">
                            <code>{b.id}</code>
                          </th>
                          <td>{b.endpoint}</td>
                          <td>{b.status}</td>
                          <td>
                            <progress max={Math.max(1, c.total)} value={done} aria-label={`${b.id}: ${done}/${c.total}`} />{' '}
                            {num(lang, c.completed)} ✓ · {num(lang, c.failed)} ✗ / {num(lang, c.total)}
                          </td>
                          <td>{dateTime(lang, new Date(b.created_at * 1000).toISOString())}</td>
                          <td class="row">
                            {RUNNING.has(b.status) && b.status !== 'cancelling' && (
                              <button
                                type="button"
                                class="danger"
                                onClick={async () => {
                                  await api.json('POST', `/v1/batches/${encodeURIComponent(b.id)}/cancel`).catch((err: Error) => alert(err.message));
                                  reload();
                                }}
                              >
                                {t('batches.cancel')}
                              </button>
                            )}
                            {b.output_file_id && (
                              <button type="button" onClick={() => downloadFile(api, b.output_file_id!, `${b.id}-output.jsonl`)}>
                                {t('batches.output')}
                              </button>
                            )}
                            {b.error_file_id && (
                              <button type="button" onClick={() => downloadFile(api, b.error_file_id!, `${b.id}-errors.jsonl`)}>
                                {t('batches.errors')}
                              </button>
                            )}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </Table>
          </section>
        )}
      </Show>
    </>
  );
}
