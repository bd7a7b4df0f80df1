-- A batch's output and error files as a table of parts (docs/batches.md, "How a batch runs"): one row per part,
-- inserted in the transaction of the driver's commit that wrote it, under the batch row's version, instead of the
-- lists batches.output_parts / error_parts that every commit rewrote whole (their size grew with the batch, and so
-- did each commit's). A batch's output or error file (batch_files.batch_id, kind) is its parts in seq order.

CREATE TABLE "batch_parts" (
    "batch_id" TEXT NOT NULL,
    -- Which of the batch's files: 'output' or 'error'
    "kind" TEXT NOT NULL CHECK ("kind" IN ('output', 'error')),
    -- Its place in the file: the batch row's version that the commit writing it replaced (one part of each kind per
    -- commit); the parts moved here from the lists below keep their index (0, 1, ...), below any later version
    "seq" INTEGER NOT NULL,
    "storage_key" TEXT NOT NULL,
    -- Its size and lines; null for the parts moved here from the lists (their sizes were not kept)
    "bytes" BIGINT,
    "lines" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "batch_parts_pkey" PRIMARY KEY ("batch_id", "kind", "seq"),
    CONSTRAINT "batch_parts_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "batches"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- A file a batch wrote names the batch and which of its files it is; its bytes are the batch's parts of that kind.
ALTER TABLE "batch_files" ADD COLUMN "batch_id" TEXT, ADD COLUMN "kind" TEXT CHECK ("kind" IN ('output', 'error'));
UPDATE "batch_files" f SET "batch_id" = b."id", "kind" = 'output' FROM "batches" b WHERE b."output_file_id" = f."id";
UPDATE "batch_files" f SET "batch_id" = b."id", "kind" = 'error' FROM "batches" b WHERE b."error_file_id" = f."id";

-- The parts of the files batches wrote (those still there), and of the batches not ended, move to the table.
INSERT INTO "batch_parts" ("batch_id", "kind", "seq", "storage_key")
SELECT f."batch_id", f."kind", (p.i - 1)::int, p.key
FROM "batch_files" f, jsonb_array_elements_text(f."parts") WITH ORDINALITY AS p(key, i)
WHERE f."batch_id" IS NOT NULL AND jsonb_typeof(f."parts") = 'array';
INSERT INTO "batch_parts" ("batch_id", "kind", "seq", "storage_key")
SELECT b."id", k.kind, (p.i - 1)::int, p.key
FROM "batches" b
CROSS JOIN LATERAL (VALUES ('output', b."output_parts"), ('error', b."error_parts")) AS k(kind, parts)
CROSS JOIN LATERAL jsonb_array_elements_text(k.parts) WITH ORDINALITY AS p(key, i)
WHERE b."status" IN ('validating', 'in_progress', 'finalizing', 'cancelling');

ALTER TABLE "batch_files" DROP COLUMN "parts";
ALTER TABLE "batches" DROP COLUMN "output_parts", DROP COLUMN "error_parts";

-- The sweep of old batch files (BATCH_FILE_RETENTION_DAYS) reads them by age.
CREATE INDEX "batch_files_created_at_idx" ON "batch_files"("created_at");
