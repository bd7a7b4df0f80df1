-- One lane for money: the per-kind batch functions of the batched_generations and idempotency_keys migrations
-- (wrappers over the set-based core since set_based_ledger_batches) have no caller in production: the Ledger sends
-- opens, closes and drawn opens through sy_ledger_batch alone. test/unit/db/money-functions.test.ts holds every
-- remaining sy_ function to a caller in production.
DROP FUNCTION IF EXISTS sy_create_generations(jsonb, timestamptz);
DROP FUNCTION IF EXISTS sy_create_generations_keyed(jsonb, timestamptz);
DROP FUNCTION IF EXISTS sy_finish_generations(jsonb, timestamptz);
