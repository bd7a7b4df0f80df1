-- One word, one meaning (docs/architecture.md "Words"): "batch" names the Batch API, so the ledger's group-commit
-- call is sy_ledger_group. The three-argument body is renamed in place (nothing but the four-argument form calls it);
-- the four-argument form, whose body names the other, is made again under the new name and the old one dropped.
ALTER FUNCTION sy_ledger_batch(jsonb, jsonb, timestamptz) RENAME TO sy_ledger_group;

CREATE FUNCTION sy_ledger_group(p_opens jsonb, p_closes jsonb, p_drawn jsonb, p_now timestamptz)
  RETURNS TABLE(kind text, id text, granted numeric, reason text, existing_id text, outcome text, charged numeric, applied boolean)
LANGUAGE plpgsql AS $$
BEGIN
  IF jsonb_array_length(p_opens) > 0 OR jsonb_array_length(p_closes) > 0 THEN
    RETURN QUERY SELECT * FROM sy_ledger_group(p_opens, p_closes, p_now);
  END IF;
  RETURN QUERY SELECT * FROM sy_ledger_drawn(p_drawn, p_now);
END
$$;

DROP FUNCTION sy_ledger_batch(jsonb, jsonb, jsonb, timestamptz);
