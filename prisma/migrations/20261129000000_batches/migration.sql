-- The Batch API (docs/batches.md): batch files (an organization's JSONL inputs and the outputs a batch writes) and
-- batches, with the place their driver has reached (api/services/batch-driver.ts). A line's generation is an
-- ordinary generation whose response_mode is 'batch'.

CREATE TABLE "batch_files" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "api_key_id" TEXT,
    "user_id" TEXT,
    -- 'batch' (an upload) or 'batch_output' (an output or error file a batch wrote)
    "purpose" TEXT NOT NULL CHECK ("purpose" IN ('batch', 'batch_output')),
    "filename" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL,
    "lines" INTEGER NOT NULL,
    -- One object at storage_key, or (parts not null) the objects named in parts, one after another.
    "storage_key" TEXT NOT NULL,
    "parts" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    CONSTRAINT "batch_files_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "batch_files_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
CREATE INDEX "batch_files_organization_id_created_at_idx" ON "batch_files"("organization_id", "created_at" DESC);

CREATE TABLE "batches" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "api_key_id" TEXT,
    "user_id" TEXT,
    -- Who created it (shared/auth/principal.ts), as its lines run under
    "principal" JSONB NOT NULL,
    "endpoint" TEXT NOT NULL,
    "input_file_id" TEXT NOT NULL,
    "completion_window" TEXT NOT NULL,
    "status" TEXT NOT NULL CHECK ("status" IN ('validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled')),
    "metadata" JSONB,
    "errors" JSONB,
    "output_file_id" TEXT,
    "error_file_id" TEXT,
    "total" INTEGER NOT NULL DEFAULT 0,
    "completed" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "cost" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "trace_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "in_progress_at" TIMESTAMPTZ(3),
    "finalizing_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "failed_at" TIMESTAMPTZ(3),
    "expired_at" TIMESTAMPTZ(3),
    "cancelling_at" TIMESTAMPTZ(3),
    "cancelled_at" TIMESTAMPTZ(3),
    -- The driver's place: the next line to start (1-based physical line) and its byte offset in the input, the lines
    -- started and not yet answered, the output and error parts written (storage keys, in order); `version` guards each
    -- of its commits.
    "next_line" INTEGER NOT NULL DEFAULT 1,
    "next_offset" BIGINT NOT NULL DEFAULT 0,
    "in_flight" JSONB NOT NULL DEFAULT '[]',
    "output_parts" JSONB NOT NULL DEFAULT '[]',
    "output_bytes" BIGINT NOT NULL DEFAULT 0,
    "output_lines" INTEGER NOT NULL DEFAULT 0,
    "error_parts" JSONB NOT NULL DEFAULT '[]',
    "error_bytes" BIGINT NOT NULL DEFAULT 0,
    "error_lines" INTEGER NOT NULL DEFAULT 0,
    "version" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "batches_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "batches_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
CREATE INDEX "batches_organization_id_created_at_idx" ON "batches"("organization_id", "created_at" DESC);
