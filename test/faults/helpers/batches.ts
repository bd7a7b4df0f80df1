/**
 * The Batch API as the fault cases drive it (docs/batches.md): upload a chat JSONL, create, poll, read the output and
 * error files, and the ledger's view of a batch's generations (their ids are `<prefix>_<batch>l<line>`).
 */
import type { Db } from '../../../shared/db/client';
import { money, ZERO, type Decimal } from '../../../shared/money';
import { MODELS, type Proc, type SeededOrg } from './cluster';
import { get, post, type Reply } from './http';

export interface BatchView {
  id: string;
  status: string;
  request_counts: { total: number; completed: number; failed: number };
  output_file_id: string | null;
  error_file_id: string | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  completed_at: number | null;
  usage: { cost_rub: number };
}

export interface FileLine {
  custom_id: string;
  response: { status_code: number; request_id: string | null; body: { error?: { code: string; metadata?: { reason?: string } } } };
}

export const ENDED = ['completed', 'failed', 'expired', 'cancelled'];

/** `n` chat lines on `model`, custom_ids `<tag>-<i>`, each asking the text `<tag> <i>` back. */
export function chatLines(n: number, tag: string, maxTokens = 16, model: string = MODELS.chat): string[] {
  return Array.from({ length: n }, (_, i) =>
    JSON.stringify({ custom_id: `${tag}-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: `${tag} ${i}` }], max_tokens: maxTokens } }),
  );
}

export async function upload(api: Proc, org: SeededOrg, lines: string[]): Promise<string> {
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([lines.join('\n')]), 'input.jsonl');
  const res = await fetch(`${api.url}/v1/files`, { method: 'POST', headers: { Authorization: org.auth.Authorization }, body: form });
  if (res.status !== 200) throw new Error(`upload: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

export async function createBatch(api: Proc, org: SeededOrg, fileId: string): Promise<Reply> {
  const r = await post(`${api.url}/v1/batches`, { input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' }, org.auth);
  if (r.status !== 200) throw new Error(`batch create: ${r.status} ${r.text}`);
  return r;
}

export async function batchOf(api: Proc, org: SeededOrg, id: string): Promise<BatchView> {
  const r = await get(`${api.url}/v1/batches/${id}`, org.auth);
  if (r.status !== 200) throw new Error(`batch ${id}: ${r.status} ${r.text}`);
  return r.json as BatchView;
}

export async function fileLines(api: Proc, org: SeededOrg, id: string | null): Promise<FileLine[]> {
  if (!id) return [];
  const res = await fetch(`${api.url}/v1/files/${id}/content`, { headers: org.auth });
  return (await res.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l) as FileLine);
}

export interface LineGeneration {
  id: string;
  status: string;
  /** Ledger entries that settled it (charge or release): exactly 1 once it ended. */
  settlements: number;
  charges: number;
  /** What its charge took (RUB, positive). */
  charged: Decimal;
}

/** The generations of a batch's lines, with their ledger settlements. */
export async function batchGenerations(db: Db, batchId: string): Promise<LineGeneration[]> {
  const suffix = batchId.slice('batch_'.length);
  const rows = await db.$queryRawUnsafe<Array<{ id: string; status: string; settlements: number; charges: number; charged: string }>>(
    `SELECT g.id, g.status::text AS status, COUNT(l.id) FILTER (WHERE l.kind IN ('charge', 'release'))::int AS settlements,
            COUNT(l.id) FILTER (WHERE l.kind = 'charge')::int AS charges, COALESCE(-SUM(l.amount) FILTER (WHERE l.kind = 'charge'), 0)::text AS charged
     FROM generations g LEFT JOIN ledger_entries l ON l.generation_id = g.id WHERE g.id LIKE $1 GROUP BY g.id, g.status`,
    `%\\_${suffix}l%`,
  );
  return rows.map((r) => ({ ...r, charged: money(r.charged) }));
}

export const sumCharged = (gens: LineGeneration[]): Decimal => gens.reduce((s, g) => s.plus(g.charged), ZERO);

/** custom_ids answered more than once across the files. */
export function duplicates(lines: FileLine[]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const l of lines) (seen.has(l.custom_id) ? twice : seen).add(l.custom_id);
  return [...twice];
}
