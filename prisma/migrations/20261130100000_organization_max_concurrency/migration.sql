-- An organization's cap on its jobs running at once (`switchyard org update --max-concurrency N`; NULL: no cap).
-- Workers put back a job of an organization already running that many (shared/queue/org-cap.ts).
ALTER TABLE "organizations" ADD COLUMN "max_concurrency" INTEGER;
ALTER TABLE "organizations" ADD CONSTRAINT "organizations_max_concurrency_positive" CHECK ("max_concurrency" IS NULL OR "max_concurrency" > 0);
