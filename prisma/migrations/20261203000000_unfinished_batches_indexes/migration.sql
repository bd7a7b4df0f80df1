-- The workers' resume-batches job (workers/processors/resume-batches.processor.ts) reads every REAPER_EVERY_MS the
-- batches that have not ended and the chunks of parked lines that are not done, to add again the jobs a Redis that came
-- back without its data lost: these partial indexes hold only those rows, however many batches have ended.
CREATE INDEX "batches_not_ended_idx" ON "batches"("id") WHERE "status" IN ('validating', 'in_progress', 'finalizing', 'cancelling');
CREATE INDEX "upstream_batches_not_done_idx" ON "upstream_batches"("id") WHERE "status" <> 'done';
