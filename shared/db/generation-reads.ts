import { idTime } from '../ids';
import type { Db } from './client';

/**
 * Where a generation is, by its id: `generations` is partitioned by month of created_at (docs/architecture.md,
 * "Partitions"), and an id carries the time it was made (shared/ids.ts). A generation is recorded when its open
 * commits, moments after its id was made, or within a batch's completion window for a batch line (whose id carries
 * its batch's time): created_at is looked for from a day before the id's time (clocks apart) to a week after.
 */
const BEFORE_MS = 24 * 3600_000;
const AFTER_MS = 7 * 24 * 3600_000;

/**
 * The catalog model a generation asked for: `unified_model_id`, stored only when it differs from `model` (the model
 * the record shows; prisma/migrations/20261209000000_model_names_once).
 */
export function askedModel(g: { model: string; unifiedModelId: string | null }): string {
  return g.unifiedModelId ?? g.model;
}

/** The filter a lookup of `id` reads only one or two months with. */
export interface GenerationKey {
  id: string;
  createdAt?: { gte: Date; lte: Date };
}

export function generationKey(id: string): GenerationKey {
  const t = idTime(id)?.getTime();
  if (t === undefined || !Number.isFinite(t)) return { id };
  return { id, createdAt: { gte: new Date(t - BEFORE_MS), lte: new Date(t + AFTER_MS) } };
}

/**
 * One generation by id: read in the months its id names, then (not there: an id made before ids carried their time,
 * or a clock far off) in every month. `read` is the Prisma call with the filter as its `where`; a record read with
 * its `request` or `result` gets them from the content table (withContent).
 */
export async function generationById<T extends object>(db: Db, id: string, read: (where: GenerationKey) => Promise<T | null>): Promise<T | null> {
  const key = generationKey(id);
  const hit = (key.createdAt && (await read(key))) || (await read({ id }));
  if (hit) await fill(db, [{ id, row: hit as Record<string, unknown> }]);
  return hit;
}

/**
 * The content of records read from `generations` (prisma/migrations/20261204100000_generation_contents): each
 * record that has `request` or `result` (selected) gets them from generation_contents, read in the days the records
 * name when they carry `createdAt`. Once erased (CONTENT_RETENTION_DAYS) both read as null; an image's or media
 * generation's answer is kept in its record and read from there.
 */
export async function withContent<T extends { id: string }>(db: Db, rows: T[]): Promise<T[]> {
  await fill(db, rows.map((r) => ({ id: r.id, row: r as unknown as Record<string, unknown> })));
  return rows;
}

async function fill(db: Db, items: Array<{ id: string; row: Record<string, unknown> }>): Promise<void> {
  const need = items.filter(({ row }) => 'request' in row || 'result' in row);
  if (need.length === 0) return;
  const times = need.map(({ row }) => row.createdAt).filter((t): t is Date => t instanceof Date);
  const found = await db.generationContent.findMany({
    where: { generationId: { in: need.map((n) => n.id) }, ...(times.length === need.length && { createdAt: { in: times } }) },
  });
  const byId = new Map(found.map((c) => [c.generationId, c]));
  for (const { id, row } of need) {
    const c = byId.get(id);
    if ('request' in row) row.request = c?.request ?? null;
    if ('result' in row && (row.result === null || row.result === undefined)) row.result = c?.result ?? null;
  }
}
