import { Show, Table, useApp, useLoad } from '../app';
import { dateTime, num } from '../format';
import { downloadFile } from './batches';

interface BatchFile {
  id: string;
  filename: string;
  purpose: string;
  bytes: number;
  created_at: number;
}

interface StoredFile {
  id: string;
  fileType: string;
  mimeType: string;
  source: string;
  size: number;
  createdAt: string;
  expiresAt: string | null;
}

export function FilesPage() {
  const { api, t, lang } = useApp();
  const [batchFiles, reloadBatch] = useLoad(() => api.get<{ data: BatchFile[] }>('/v1/files?limit=100').then((r) => r.data), []);
  const [media, reloadMedia] = useLoad(
    () => api.get<{ data: StoredFile[] } | StoredFile[]>('/v1/storage/files?limit=50').then((r) => (Array.isArray(r) ? r : r.data)),
    [],
  );
  const remove = async (url: string, name: string, reload: () => void) => {
    if (!confirm(t('files.deleteConfirm', { name }))) return;
    await api.json('DELETE', url).catch((err: Error) => alert(err.message));
    reload();
  };
  return (
    <>
      <h1>{t('files.title')}</h1>
      <section class="panel">
        <h2>{t('files.batch')}</h2>
        <Show state={batchFiles} reload={reloadBatch}>
          {(list) =>
            <Table empty={list.length === 0}>
                  <thead>
                    <tr>
                      <th scope="col">{t('col.file')}</th>
                      <th scope="col">{t('col.purpose')}</th>
                      <th scope="col" class="num">{t('col.size')}</th>
                      <th scope="col">{t('col.created')}</th>
                      <th scope="col">{t('col.actions')}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((f) => (
                      <tr key={f.id}>
                        <th scope="row">
                          {f.filename} <code class="muted">{f.id}</code>
                        </th>
                        <td>{f.purpose}</td>
                        <td class="num">{num(lang, f.bytes)}</td>
                        <td>{dateTime(lang, new Date(f.created_at * 1000).toISOString())}</td>
                        <td class="row">
                          <button type="button" onClick={() => downloadFile(api, f.id, f.filename)}>
                            {t('files.download')}
                          </button>
                          <button type="button" class="danger" onClick={() => remove(`/v1/files/${encodeURIComponent(f.id)}`, f.filename, reloadBatch)}>
                            {t('files.delete')}
                          </button>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </Table>
          }
        </Show>
      </section>
      <section class="panel">
        <h2>{t('files.media')}</h2>
        <Show state={media} reload={reloadMedia}>
          {(list) =>
            <Table empty={list.length === 0}>
                  <thead>
                    <tr>
                      <th scope="col">{t('col.file')}</th>
                      <th scope="col">{t('col.type')}</th>
                      <th scope="col" class="num">{t('col.size')}</th>
                      <th scope="col">{t('col.created')}</th>
                      <th scope="col">{t('col.actions')}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((f) => (
                      <tr key={f.id}>
                        <th scope="row">
                          <code>{f.id}</code>
                        </th>
                        <td>
                          {f.fileType} · {f.mimeType} · {f.source}
                        </td>
                        <td class="num">{num(lang, f.size)}</td>
                        <td>{dateTime(lang, f.createdAt)}</td>
                        <td>
                          <button type="button" class="danger" onClick={() => remove(`/v1/storage/files/${encodeURIComponent(f.id)}`, f.id, reloadMedia)}>
                            {t('files.delete')}
                          </button>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </Table>
          }
        </Show>
      </section>
    </>
  );
}
