-- A generation drawn from a lease whose close comes while its record still waits in the ledger's group commit
-- (shared/billing/ledger.ts: a synchronous reply's record is gathered for GATHER_MS, and its answer is often settled
-- within that time) carries that close: its record is inserted ended, once, instead of inserted `pending` and then
-- updated in the next group (half the record's heap and index writes, and its content written once). The money is the
-- close's, through sy_ledger_apply's one body (its `record: false` leaves the record to this function); the record is
-- then inserted with what that close charged, so the activity totals count it on insert. A drawn open whose reservation
-- already exists (its own repeat) is written as before and its close applied to the record as any close.
CREATE OR REPLACE FUNCTION sy_ledger_drawn(p_drawn jsonb, p_now timestamp with time zone)
 RETURNS TABLE(kind text, id text, granted numeric, reason text, existing_id text, outcome text, charged numeric, applied boolean)
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
DECLARE
  d jsonb; gr numeric; b numeric; fresh boolean; a record;
  -- the drawn opens that carry their close: the open, what it holds, whether its record is inserted ended
  e_it jsonb[] := '{}'; e_id text[] := '{}'; e_gr numeric[] := '{}'; e_fresh boolean[] := '{}';
  e_outcome text[]; e_charged numeric[]; e_applied boolean[]; closes jsonb := '[]'; ended text[];
BEGIN
  PERFORM 1 FROM organizations o
   WHERE o.id IN (SELECT DISTINCT value->>'organization_id' FROM jsonb_array_elements(p_drawn))
   ORDER BY o.id FOR UPDATE;
  FOR d IN SELECT value FROM jsonb_array_elements(p_drawn) ORDER BY value->>'lease', value->>'id' LOOP
    SELECT r.amount INTO gr FROM reservations r WHERE r.generation_id = d->>'id';
    fresh := NOT FOUND;
    IF fresh THEN
      b := (d->>'bound')::numeric;
      UPDATE reservations r SET amount = r.amount - b
       WHERE r.generation_id = d->>'lease' AND r.status = 'held' AND r.amount >= b AND r.expires_at IS NOT NULL
         AND r.organization_id = d->>'organization_id'
         AND r.api_key_id IS NOT DISTINCT FROM d->>'api_key_id' AND r.user_id IS NOT DISTINCT FROM d->>'user_id'
      RETURNING b INTO gr;
      gr := COALESCE(gr, 0);
      INSERT INTO reservations (generation_id, organization_id, api_key_id, user_id, amount, created_at)
        VALUES (d->>'id', d->>'organization_id', d->>'api_key_id', d->>'user_id', gr, p_now);
      INSERT INTO ledger_entries (organization_id, api_key_id, user_id, generation_id, kind, amount, reserved_delta, created_at)
        VALUES (d->>'organization_id', d->>'api_key_id', d->>'user_id', d->>'id', 'reserve', 0, 0, p_now);
    END IF;
    IF d ? 'close' THEN
      e_it := array_append(e_it, d); e_id := array_append(e_id, d->>'id'); e_gr := array_append(e_gr, gr); e_fresh := array_append(e_fresh, fresh);
      -- A fresh record is inserted ended below, with the charge; the close then leaves the record alone.
      closes := closes || jsonb_build_array(CASE WHEN fresh THEN (d->'close') || '{"record": false}'::jsonb ELSE d->'close' END);
      IF fresh THEN CONTINUE; END IF;
    END IF;
    INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id,
        request_type, api_type, response_mode, status, reserved_amount, request, warnings, routing, call_back_url,
        source_generation_id, previous_response_id, trace_id, created_at)
      VALUES (d->>'id', d->>'organization_id', d->>'api_key_id', d->>'user_id', d->>'model',
        NULLIF(d->>'unified_model_id', d->>'model'), d->>'request_type', d->>'api_type',
        d->>'response_mode', 'pending', gr, COALESCE(d->'request', '{}'::jsonb),
        NULLIF(d->'warnings', 'null'::jsonb), NULLIF(d->'routing', 'null'::jsonb), d->>'call_back_url',
        d->>'source_generation_id', d->>'previous_response_id', d->>'trace_id', p_now)
    ON CONFLICT ON CONSTRAINT generations_pkey DO NOTHING;
    IF NOT d ? 'close' THEN
      kind := 'drawn'; id := d->>'id'; granted := gr; reason := NULL; existing_id := NULL;
      outcome := NULL; charged := NULL; applied := NULL;
      RETURN NEXT;
    END IF;
  END LOOP;
  IF cardinality(e_id) = 0 THEN RETURN; END IF;

  e_outcome := array_fill(NULL::text, ARRAY[cardinality(e_id)]);
  e_charged := array_fill(NULL::numeric, ARRAY[cardinality(e_id)]);
  e_applied := array_fill(NULL::boolean, ARRAY[cardinality(e_id)]);
  FOR a IN SELECT * FROM sy_ledger_apply('[]'::jsonb, closes, p_now) LOOP
    e_outcome[array_position(e_id, a.id)] := a.outcome;
    e_charged[array_position(e_id, a.id)] := a.charged;
    e_applied[array_position(e_id, a.id)] := a.applied;
  END LOOP;
  -- The ended records (a fresh reservation is held, so its close charged or released it): the open's columns, then the
  -- close's as sy_ledger_apply's close writes them onto a record.
  WITH ins AS (
    INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id,
        request_type, api_type, response_mode, status, reserved_amount, client_cost, request, result, usage, error, warnings,
        routing, call_back_url, source_generation_id, previous_response_id, trace_id, provider, final_endpoint_slug,
        finish_reason, attempts_count, latency_ms, queue_time_ms, generation_time_ms, upstream_id, is_cancelled,
        completed_at, created_at)
      SELECT o->>'id', o->>'organization_id', o->>'api_key_id', o->>'user_id', COALESCE(c->>'model', o->>'model'),
        CASE WHEN NULLIF(o->>'unified_model_id', o->>'model') IS NULL AND c->>'model' <> o->>'model' THEN o->>'model'
             ELSE NULLIF(o->>'unified_model_id', o->>'model') END,
        o->>'request_type', o->>'api_type', o->>'response_mode', (c->>'status')::"GenerationStatus", x.gr, x.charged,
        COALESCE(o->'request', '{}'::jsonb), NULLIF(c->'result', 'null'::jsonb), NULLIF(c->'usage', 'null'::jsonb),
        NULLIF(c->'error', 'null'::jsonb), COALESCE(NULLIF(c->'warnings', 'null'::jsonb), NULLIF(o->'warnings', 'null'::jsonb)),
        CASE WHEN jsonb_typeof(c->'routing') = 'object' THEN COALESCE(NULLIF(o->'routing', 'null'::jsonb), '{}'::jsonb) || (c->'routing')
             ELSE NULLIF(o->'routing', 'null'::jsonb) END,
        o->>'call_back_url', o->>'source_generation_id', o->>'previous_response_id', o->>'trace_id',
        c->>'provider', c->>'final_endpoint_slug', c->>'finish_reason', COALESCE((c->>'attempts_count')::int, 0),
        (c->>'latency_ms')::int, (c->>'queue_time_ms')::int, (c->>'generation_time_ms')::int, c->>'upstream_id',
        (c->>'status') = 'cancelled', p_now, p_now
        FROM (SELECT u.o, u.o->'close' AS c, u.gr, u.charged, u.ord
                FROM unnest(e_it, e_gr, e_charged, e_fresh) WITH ORDINALITY u(o, gr, charged, fresh, ord)
               WHERE u.fresh) x
       ORDER BY x.ord
    ON CONFLICT ON CONSTRAINT generations_pkey DO NOTHING
    RETURNING generations.id)
  SELECT array_agg(ins.id) INTO ended FROM ins;
  RETURN QUERY SELECT 'drawn'::text, u.id, u.gr, NULL::text, NULL::text, u.outcome, u.charged,
                      CASE WHEN u.fresh THEN COALESCE(u.id = ANY (ended), false) ELSE u.applied END
    FROM unnest(e_id, e_gr, e_fresh, e_outcome, e_charged, e_applied) WITH ORDINALITY u(id, gr, fresh, outcome, charged, applied, ord)
   ORDER BY u.ord;
END
$function$;
