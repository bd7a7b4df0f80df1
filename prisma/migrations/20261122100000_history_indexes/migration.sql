-- Generation history (GET /v1/history/generations): every single-filter listing and both sorts read a page from
-- an index in the requested order, and count from the same index, under an API key, an owner/admin token
-- (organization) and a member token (its keys plus its key-less generations). Partial indexes cover the
-- key-less generations only, which are few.

-- Sorting by cost: the creation time breaks ties in the index itself (zero-cost generations are many).
DROP INDEX "generations_organization_id_client_cost_idx";
CREATE INDEX "generations_organization_id_client_cost_created_at_idx" ON "generations"("organization_id", "client_cost", "created_at");

-- Under an API key (and an owner's or member's `apiKeyId` filter).
CREATE INDEX "generations_api_key_id_status_created_at_idx" ON "generations"("api_key_id", "status", "created_at" DESC);
CREATE INDEX "generations_api_key_id_request_type_created_at_idx" ON "generations"("api_key_id", "request_type", "created_at" DESC);
CREATE INDEX "generations_api_key_id_client_cost_created_at_idx" ON "generations"("api_key_id", "client_cost", "created_at");

-- Generations made without a key: `withoutApiKey` for owner/admin, and a member's own.
CREATE INDEX "generations_keyless_organization_id_created_at_idx" ON "generations"("organization_id", "created_at" DESC) WHERE "api_key_id" IS NULL;
CREATE INDEX "generations_keyless_organization_id_client_cost_created_at_idx" ON "generations"("organization_id", "client_cost", "created_at") WHERE "api_key_id" IS NULL;
CREATE INDEX "generations_keyless_user_id_created_at_idx" ON "generations"("user_id", "created_at" DESC) WHERE "api_key_id" IS NULL;
CREATE INDEX "generations_keyless_user_id_client_cost_created_at_idx" ON "generations"("user_id", "client_cost", "created_at") WHERE "api_key_id" IS NULL;

-- Counting a page's matches reads index entries only while the visibility map is current; rows written since the
-- last vacuum cost a heap visit each. Vacuum this insert-then-update table after 2 % of changes, not the default 20 %.
ALTER TABLE "generations" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
