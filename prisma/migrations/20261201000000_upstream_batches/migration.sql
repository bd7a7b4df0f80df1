-- Provider batch APIs (docs/batches.md "Provider batch APIs"): a batch line whose route puts first an endpoint with
-- batch prices is parked (reserved and recorded, no job of its own) and sent to its provider's batch API in a chunk of
-- lines of the same endpoint and batch. A worker's `upstream_batches` job submits a chunk, polls it and settles its lines.

CREATE TABLE "upstream_batches" (
    "id" TEXT NOT NULL,
    -- The batch (ours) whose lines it holds
    "batch_id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "endpoint_slug" TEXT NOT NULL,
    "provider_id" TEXT NOT NULL,
    -- new: not yet sent; submitting: its create was sent (a re-run cannot tell whether the provider has it);
    -- running: the provider has it (upstream_id); done: every line settled, fallen back or ended otherwise
    "status" TEXT NOT NULL CHECK ("status" IN ('new', 'submitting', 'running', 'done')),
    -- Set by our batch's cancel or expiry: the worker cancels it upstream (once: cancel_sent)
    "cancel_requested" BOOLEAN NOT NULL DEFAULT false,
    "cancel_sent" BOOLEAN NOT NULL DEFAULT false,
    "upstream_file_id" TEXT,
    "upstream_id" TEXT,
    "lines" INTEGER NOT NULL,
    "polls" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "submitted_at" TIMESTAMPTZ(3),
    "ended_at" TIMESTAMPTZ(3),
    CONSTRAINT "upstream_batches_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "upstream_batches_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "batches"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "upstream_batches_batch_id_status_idx" ON "upstream_batches"("batch_id", "status");

-- A parked line: its generation (reserved and recorded, response_mode 'batch'), the job it would have had (the
-- ordinary path's payload: a fallback enqueues exactly it), and its chunk once the driver assigned one.
CREATE TABLE "upstream_batch_lines" (
    "generation_id" TEXT NOT NULL,
    "batch_id" TEXT NOT NULL,
    "endpoint_slug" TEXT NOT NULL,
    -- The queue of its ordinary job ('text' or 'embeddings')
    "queue" TEXT NOT NULL,
    "job" JSONB NOT NULL,
    "upstream_batch_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "upstream_batch_lines_pkey" PRIMARY KEY ("generation_id"),
    CONSTRAINT "upstream_batch_lines_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "batches"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "upstream_batch_lines_upstream_batch_id_fkey" FOREIGN KEY ("upstream_batch_id") REFERENCES "upstream_batches"("id") ON DELETE SET NULL ON UPDATE CASCADE
);
CREATE INDEX "upstream_batch_lines_batch_id_upstream_batch_id_idx" ON "upstream_batch_lines"("batch_id", "upstream_batch_id");
CREATE INDEX "upstream_batch_lines_upstream_batch_id_idx" ON "upstream_batch_lines"("upstream_batch_id");
