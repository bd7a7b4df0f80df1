-- Idempotency-Keys per caller (docs/idempotency.md). A key belonged to the organization: another API key or member
-- reusing it got 409 naming the first caller's generation, and could block a key by using it first. Now a key is
-- the caller's own (the API key, else the member: `caller` is the API key's id, else 'user <member id>', as
-- api/middleware/idempotency.ts names it): the same key of another caller is another key.
ALTER TABLE "idempotency_keys" ADD COLUMN "caller" TEXT;
UPDATE "idempotency_keys" k SET "caller" = COALESCE(g.api_key_id, 'user ' || g.user_id)
  FROM "generations" g WHERE g.id = k.generation_id;
-- A key whose generation is not recorded names nothing a repeat could replay.
DELETE FROM "idempotency_keys" WHERE "caller" IS NULL;
ALTER TABLE "idempotency_keys" ALTER COLUMN "caller" SET NOT NULL;
ALTER TABLE "idempotency_keys" DROP CONSTRAINT "idempotency_keys_pkey";
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("organization_id", "caller", "key");

-- The set-based ledger batch (set_based_ledger_batches' sy_ledger_batch, renamed sy_ledger_sets by
-- ledger_pair_fast_path; every keyed open goes through it), its keys claimed per (organization, caller, key), in that
-- order; the rest unchanged. Opens carry `idempotency_caller` beside `idempotency_key` and `request_hash`.
CREATE OR REPLACE FUNCTION sy_ledger_sets(p_opens jsonb, p_closes jsonb, p_now timestamptz)
RETURNS TABLE (kind text, id text, granted numeric, reason text, existing_id text, outcome text, charged numeric, applied boolean)
LANGUAGE plpgsql AS $$
DECLARE it jsonb; held record; claimed boolean; skipped text[] := '{}'; keyed text[] := '{}'; r record;
BEGIN
  FOR it IN SELECT value FROM jsonb_array_elements(p_opens) WHERE value->>'idempotency_key' IS NOT NULL
            ORDER BY value->>'organization_id', value->>'idempotency_caller', value->>'idempotency_key'
  LOOP
    claimed := false;
    INSERT INTO idempotency_keys AS k (organization_id, caller, key, request_hash, generation_id, created_at)
    VALUES (it->>'organization_id', it->>'idempotency_caller', it->>'idempotency_key', it->>'request_hash', it->>'id', p_now)
    ON CONFLICT (organization_id, caller, key) DO UPDATE
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
       WHERE k.organization_id = it->>'organization_id' AND k.caller = it->>'idempotency_caller' AND k.key = it->>'idempotency_key';
      skipped := skipped || (it->>'id');
      kind := 'open'; id := it->>'id'; granted := 0; existing_id := held.generation_id;
      reason := CASE WHEN held.request_hash = it->>'request_hash' THEN 'idempotent_replay' ELSE 'idempotency_conflict' END;
      outcome := NULL; charged := NULL; applied := NULL;
      RETURN NEXT;
    END IF;
  END LOOP;

  -- Without keys (the common batch) the opens go through untouched.
  FOR r IN SELECT * FROM sy_ledger_apply(
             CASE WHEN cardinality(skipped) = 0 THEN p_opens
                  ELSE COALESCE((SELECT jsonb_agg(value) FROM jsonb_array_elements(p_opens) WHERE NOT (value->>'id' = ANY (skipped))), '[]'::jsonb) END,
             p_closes, p_now)
  LOOP
    IF r.kind = 'open' AND r.reason IS NOT NULL AND r.id = ANY (keyed) THEN
      SELECT value INTO it FROM jsonb_array_elements(p_opens) WHERE value->>'id' = r.id;
      DELETE FROM idempotency_keys k
       WHERE k.organization_id = it->>'organization_id' AND k.caller = it->>'idempotency_caller' AND k.key = it->>'idempotency_key' AND k.generation_id = r.id;
    END IF;
    kind := r.kind; id := r.id; granted := r.granted; reason := r.reason; existing_id := NULL;
    outcome := r.outcome; charged := r.charged; applied := r.applied;
    RETURN NEXT;
  END LOOP;
END
$$;
