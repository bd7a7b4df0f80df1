-- The parts' objects about to be written (docs/batches.md, "How a batch runs"): a row is inserted before a part's object
-- is written and deleted in the transaction that inserts its batch_parts row (or once a run that lost deleted the
-- object), so a run killed between the write and its commit leaves a row naming its object. The maintenance sweep
-- deletes the objects of rows older than an hour, then the rows. No foreign key to batches: a batch deleted meanwhile
-- must not take the row that finds its object.
CREATE TABLE "batch_part_writes" (
    "storage_key" TEXT NOT NULL,
    "batch_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "batch_part_writes_pkey" PRIMARY KEY ("storage_key")
);

CREATE INDEX "batch_part_writes_created_at_idx" ON "batch_part_writes"("created_at");
