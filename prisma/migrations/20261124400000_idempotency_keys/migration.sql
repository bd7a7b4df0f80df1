-- Idempotency-Key on generation requests (docs/idempotency.md). One row per (organization, key): the hash of the
-- request it was first sent with and the generation it created. A key is claimed in the same transaction that
-- reserves the money and inserts the generation, so two concurrent duplicates cannot both create one.
CREATE TABLE "idempotency_keys" (
    "organization_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "generation_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("organization_id", "key")
);
CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys"("created_at");

-- sy_create_generations with keys: items may carry `idempotency_key` and `request_hash`. Each keyed item first
-- claims its key; an item whose key is held answers `idempotent_replay` (same hash) or `idempotency_conflict`
-- (another request) with the holder in `existing_id`, and creates nothing. The rest go through
-- sy_create_generations unchanged; a refused reservation (402) gives its key back.
-- A held key is taken over (a new generation) when it is older than 24 hours, or when the same request's
-- generation failed or was cancelled without any charge: repeating it then cannot bill twice.
-- Keys are claimed in (organization, key) order before any organization row is locked, so batches cannot deadlock.
CREATE FUNCTION sy_create_generations_keyed(p_items jsonb, p_now timestamptz)
RETURNS TABLE (id text, granted numeric, reason text, existing_id text)
LANGUAGE plpgsql AS $$
DECLARE it jsonb; held record; claimed boolean; skipped text[] := '{}'; keyed text[] := '{}'; r record;
BEGIN
  FOR it IN SELECT value FROM jsonb_array_elements(p_items) WHERE value->>'idempotency_key' IS NOT NULL
            ORDER BY value->>'organization_id', value->>'idempotency_key'
  LOOP
    claimed := false;
    INSERT INTO idempotency_keys AS k (organization_id, key, request_hash, generation_id, created_at)
    VALUES (it->>'organization_id', it->>'idempotency_key', it->>'request_hash', it->>'id', p_now)
    ON CONFLICT (organization_id, key) DO UPDATE
      SET request_hash = EXCLUDED.request_hash, generation_id = EXCLUDED.generation_id, created_at = EXCLUDED.created_at
      WHERE k.created_at < p_now - interval '24 hours'
         OR (k.request_hash = EXCLUDED.request_hash AND EXISTS (
               SELECT 1 FROM generations g WHERE g.id = k.generation_id
                 AND g.status IN ('failed', 'cancelled') AND COALESCE(g.client_cost, 0) = 0))
    RETURNING true INTO claimed;
    IF COALESCE(claimed, false) THEN
      keyed := keyed || (it->>'id');
    ELSE
      SELECT k.request_hash, k.generation_id INTO held FROM idempotency_keys k
       WHERE k.organization_id = it->>'organization_id' AND k.key = it->>'idempotency_key';
      skipped := skipped || (it->>'id');
      id := it->>'id'; granted := 0; existing_id := held.generation_id;
      reason := CASE WHEN held.request_hash = it->>'request_hash' THEN 'idempotent_replay' ELSE 'idempotency_conflict' END;
      RETURN NEXT;
    END IF;
  END LOOP;

  -- Without keys (the common batch) the items go through untouched.
  FOR r IN SELECT * FROM sy_create_generations(
             CASE WHEN cardinality(skipped) = 0 THEN p_items
                  ELSE COALESCE((SELECT jsonb_agg(value) FROM jsonb_array_elements(p_items) WHERE NOT (value->>'id' = ANY (skipped))), '[]'::jsonb) END,
             p_now)
  LOOP
    IF r.reason IS NOT NULL AND r.id = ANY (keyed) THEN
      SELECT value INTO it FROM jsonb_array_elements(p_items) WHERE value->>'id' = r.id;
      DELETE FROM idempotency_keys k
       WHERE k.organization_id = it->>'organization_id' AND k.key = it->>'idempotency_key' AND k.generation_id = r.id;
    END IF;
    id := r.id; granted := r.granted; reason := r.reason; existing_id := NULL;
    RETURN NEXT;
  END LOOP;
END
$$;
