-- A generation id whose money was settled is never granted money again (one settlement per generation, and no
-- generation that can never end). An open whose reservation exists answered with that reservation's amount, as the
-- idempotent answer to its own repeat; a reservation already released or charged answered the same, so an id opened
-- again after its discard (a batch line's first try, ordered again by a driver step that had not recorded its
-- refusal: docs/batches.md "Transient failures") was granted without reserving anything and recorded `pending`, and
-- every close of it found the reservation settled: never ended, and a job that ran was never charged. Such an open is
-- now refused (`already_settled`, nothing written); the ledger answers it 503, and a batch line is ordered again on a
-- try of its own. And a close of a record left running that way ends it at what its reservation settled (moving no
-- money), as a close of a generation without a reservation does: the reaper ends those written before.
CREATE OR REPLACE FUNCTION sy_ledger_apply(p_opens jsonb, p_closes jsonb, p_now timestamp with time zone)
 RETURNS TABLE(kind text, id text, granted numeric, reason text, outcome text, charged numeric, applied boolean)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
DECLARE
  -- opens; o_held: the amount of an existing reservation (sy_reserve's idempotent answer), o_settled: it is no longer held
  o_it jsonb[]; o_id text[]; o_org text[]; o_key text[]; o_user text[]; o_bound numeric[]; o_min numeric[]; o_held numeric[]; o_settled boolean[];
  o_granted numeric[]; o_reason text[]; o_new boolean[];
  -- closes; organization, key and user come from the reservation (NULL: no reservation)
  c_it jsonb[]; c_id text[]; c_cost numeric[]; c_release boolean[]; c_org text[]; c_key text[]; c_user text[];
  c_amount numeric[]; c_outcome text[]; c_charged numeric[]; c_uncollected numeric[]; c_settled boolean[];
  rs_id text[]; rs_status text[]; rs_amount numeric[]; rs_charged numeric[];
  -- the locked rows: their state as the items so far left it, and the totals to write
  org_id text[]; org_bal numeric[]; org_res numeric[]; org_dres numeric[]; org_dcharge numeric[]; org_touched boolean[]; org_closed boolean[];
  key_id text[]; key_limit numeric[]; key_spent numeric[]; key_res numeric[]; key_dres numeric[]; key_dcharge numeric[]; key_touched boolean[];
  usr_id text[]; usr_limit numeric[]; usr_spent numeric[]; usr_res numeric[]; usr_dres numeric[]; usr_dcharge numeric[]; usr_touched boolean[];
  n_o int; n_c int; i int; j int; oi int; ki int; ui int;
  room numeric; key_room numeric; user_room numeric; g numeric; c numeric; amt numeric; extra numeric;
  applied_ids text[];
BEGIN
  -- Each statement runs only when the batch has something for it (most batches are of one kind).
  IF jsonb_array_length(p_opens) > 0 THEN
    SELECT array_agg(x.it ORDER BY x.org, x.id), array_agg(x.id ORDER BY x.org, x.id), array_agg(x.org ORDER BY x.org, x.id),
           array_agg(x.key ORDER BY x.org, x.id), array_agg(x.usr ORDER BY x.org, x.id), array_agg(x.bound ORDER BY x.org, x.id),
           array_agg(x.minimum ORDER BY x.org, x.id), array_agg(x.held ORDER BY x.org, x.id), array_agg(x.settled ORDER BY x.org, x.id)
      INTO o_it, o_id, o_org, o_key, o_user, o_bound, o_min, o_held, o_settled
      FROM (SELECT e.value AS it, e.value->>'id' AS id, e.value->>'organization_id' AS org, e.value->>'api_key_id' AS key,
                   e.value->>'user_id' AS usr, (e.value->>'bound')::numeric AS bound, (e.value->>'minimum')::numeric AS minimum,
                   r.amount AS held, r.status <> 'held' AS settled
              FROM jsonb_array_elements(p_opens) e
              LEFT JOIN LATERAL (SELECT r.amount, r.status FROM reservations r WHERE r.generation_id = e.value->>'id' OFFSET 0) r ON true) x;
  END IF;
  IF jsonb_array_length(p_closes) > 0 THEN
    -- One primary-key probe per item (OFFSET 0 keeps the lateral subquery from being planned as a join, which
    -- can scan all of reservations).
    SELECT array_agg(x.it ORDER BY x.org, x.id), array_agg(x.id ORDER BY x.org, x.id), array_agg(x.cost ORDER BY x.org, x.id),
           array_agg(x.rel ORDER BY x.org, x.id), array_agg(x.org ORDER BY x.org, x.id), array_agg(x.key ORDER BY x.org, x.id),
           array_agg(x.usr ORDER BY x.org, x.id)
      INTO c_it, c_id, c_cost, c_release, c_org, c_key, c_user
      FROM (SELECT e.value AS it, e.value->>'id' AS id, COALESCE((e.value->>'cost')::numeric, 0) AS cost,
                   NOT (e.value ? 'cost') AS rel, r.organization_id AS org, r.api_key_id AS key, r.user_id AS usr
              FROM jsonb_array_elements(p_closes) e
              LEFT JOIN LATERAL (SELECT r.organization_id, r.api_key_id, r.user_id FROM reservations r
                                  WHERE r.generation_id = e.value->>'id' OFFSET 0) r ON true) x;
  END IF;
  n_o := COALESCE(cardinality(o_id), 0);
  n_c := COALESCE(cardinality(c_id), 0);
  IF n_o + n_c > 1 AND (SELECT count(DISTINCT v) FROM unnest(o_id || c_id) v) <> n_o + n_c THEN
    RAISE EXCEPTION 'a generation id appears more than once in one ledger batch';
  END IF;

  -- Locks, each table ORDER BY id; only the rows the old functions would have locked (an open whose reservation
  -- already exists locks nothing). Lookups are `= ANY (array)`: primary-key probes whatever the statistics say.
  SELECT array_agg(o.id), array_agg(o.balance), array_agg(o.reserved) INTO org_id, org_bal, org_res
    FROM (SELECT o.id, o.balance, o.reserved FROM organizations o
           WHERE o.id = ANY (ARRAY(SELECT u.org FROM unnest(o_org, o_held) u(org, held) WHERE u.held IS NULL) || c_org)
           ORDER BY o.id FOR UPDATE) o;
  IF cardinality(array_remove(o_key || c_key, NULL)) > 0 THEN
    SELECT array_agg(k.id), array_agg(k."limit"), array_agg(sy_period_spent(k.limit_reset, k.period_start, k.period_spent, p_now)),
           array_agg(k.reserved)
      INTO key_id, key_limit, key_spent, key_res
      FROM (SELECT k.id, k."limit", k.limit_reset, k.period_start, k.period_spent, k.reserved FROM api_keys k
             WHERE k.id = ANY (ARRAY(SELECT u.key FROM unnest(o_key, o_held) u(key, held) WHERE u.held IS NULL) || c_key)
             ORDER BY k.id FOR UPDATE) k;
  END IF;
  IF cardinality(array_remove(o_user || c_user, NULL)) > 0 THEN
    SELECT array_agg(s.id), array_agg(s."limit"), array_agg(sy_period_spent(s.limit_reset, s.period_start, s.period_spent, p_now)),
           array_agg(s.reserved)
      INTO usr_id, usr_limit, usr_spent, usr_res
      FROM (SELECT s.id, s."limit", s.limit_reset, s.period_start, s.period_spent, s.reserved FROM users s
             WHERE s.id = ANY (ARRAY(SELECT u.usr FROM unnest(o_user, o_held) u(usr, held) WHERE u.held IS NULL) || c_user)
             ORDER BY s.id FOR UPDATE) s;
  END IF;
  IF n_c > 0 THEN
    SELECT array_agg(r.generation_id), array_agg(r.status::text), array_agg(r.amount), array_agg(r.charged)
      INTO rs_id, rs_status, rs_amount, rs_charged
      FROM (SELECT r.generation_id, r.status, r.amount, r.charged FROM reservations r
             WHERE r.generation_id = ANY (c_id)
             ORDER BY r.generation_id FOR UPDATE) r;
  END IF;

  org_dres := array_fill(0::numeric, ARRAY[COALESCE(cardinality(org_id), 0)]);
  org_dcharge := org_dres;
  org_touched := array_fill(false, ARRAY[COALESCE(cardinality(org_id), 0)]);
  org_closed := org_touched;
  key_dres := array_fill(0::numeric, ARRAY[COALESCE(cardinality(key_id), 0)]);
  key_dcharge := key_dres;
  key_touched := array_fill(false, ARRAY[COALESCE(cardinality(key_id), 0)]);
  usr_dres := array_fill(0::numeric, ARRAY[COALESCE(cardinality(usr_id), 0)]);
  usr_dcharge := usr_dres;
  usr_touched := array_fill(false, ARRAY[COALESCE(cardinality(usr_id), 0)]);
  c_amount := array_fill(NULL::numeric, ARRAY[n_c]);
  c_outcome := array_fill(NULL::text, ARRAY[n_c]);
  c_charged := c_amount;
  c_uncollected := c_amount;
  c_settled := array_fill(false, ARRAY[n_c]);
  o_granted := array_fill(NULL::numeric, ARRAY[n_o]);
  o_reason := array_fill(NULL::text, ARRAY[n_o]);
  o_new := array_fill(false, ARRAY[n_o]);

  -- Closes: sy_settle's rules. A missing row (organization, key, user) reads as NULLs, as its record did there.
  FOR i IN 1..n_c LOOP
    IF c_org[i] IS NULL THEN
      c_outcome[i] := 'not_found'; c_charged[i] := 0;
      CONTINUE;
    END IF;
    j := array_position(rs_id, c_id[i]);
    IF rs_status[j] <> 'held' THEN
      c_outcome[i] := 'already_settled'; c_charged[i] := COALESCE(rs_charged[j], 0);
      CONTINUE;
    END IF;
    oi := array_position(org_id, c_org[i]);
    ki := CASE WHEN c_key[i] IS NULL THEN NULL ELSE array_position(key_id, c_key[i]) END;
    ui := CASE WHEN c_user[i] IS NULL THEN NULL ELSE array_position(usr_id, c_user[i]) END;
    amt := rs_amount[j];
    c := CASE WHEN c_release[i] THEN 0 ELSE GREATEST(c_cost[i], 0) END;
    IF c > amt THEN
      -- More than reserved: take the excess only from what is free everywhere.
      extra := org_bal[oi] - org_res[oi];
      IF key_limit[ki] IS NOT NULL THEN extra := LEAST(extra, key_limit[ki] - key_spent[ki] - key_res[ki]); END IF;
      IF usr_limit[ui] IS NOT NULL THEN extra := LEAST(extra, usr_limit[ui] - usr_spent[ui] - usr_res[ui]); END IF;
      c := LEAST(c, amt + GREATEST(extra, 0));
    END IF;
    IF oi IS NOT NULL THEN
      org_res[oi] := org_res[oi] - amt; org_bal[oi] := org_bal[oi] - c;
      org_dres[oi] := org_dres[oi] - amt; org_dcharge[oi] := org_dcharge[oi] + c; org_touched[oi] := true; org_closed[oi] := true;
    END IF;
    IF ki IS NOT NULL THEN
      key_res[ki] := key_res[ki] - amt; key_spent[ki] := key_spent[ki] + c;
      key_dres[ki] := key_dres[ki] - amt; key_dcharge[ki] := key_dcharge[ki] + c; key_touched[ki] := true;
    END IF;
    IF ui IS NOT NULL THEN
      usr_res[ui] := usr_res[ui] - amt; usr_spent[ui] := usr_spent[ui] + c;
      usr_dres[ui] := usr_dres[ui] - amt; usr_dcharge[ui] := usr_dcharge[ui] + c; usr_touched[ui] := true;
    END IF;
    c_amount[i] := amt; c_charged[i] := c; c_uncollected[i] := GREATEST(c_cost[i] - c, 0); c_settled[i] := true;
    c_outcome[i] := CASE WHEN c_release[i] THEN 'released' ELSE 'charged' END;
  END LOOP;

  -- Opens: sy_reserve's rules, against what the closes and the earlier opens left.
  FOR i IN 1..n_o LOOP
    IF o_held[i] IS NOT NULL THEN
      -- Its own repeat while it holds its reservation; once that was released or charged, the id never opens again.
      IF o_settled[i] THEN
        o_granted[i] := 0; o_reason[i] := 'already_settled';
      ELSE
        o_granted[i] := o_held[i];
      END IF;
      CONTINUE;
    END IF;
    oi := array_position(org_id, o_org[i]);
    IF oi IS NULL THEN
      o_granted[i] := 0; o_reason[i] := 'not_found';
      CONTINUE;
    END IF;
    room := org_bal[oi] - org_res[oi];
    key_room := NULL; user_room := NULL;
    ki := CASE WHEN o_key[i] IS NULL THEN NULL ELSE array_position(key_id, o_key[i]) END;
    ui := CASE WHEN o_user[i] IS NULL THEN NULL ELSE array_position(usr_id, o_user[i]) END;
    IF key_limit[ki] IS NOT NULL THEN key_room := key_limit[ki] - key_spent[ki] - key_res[ki]; END IF;
    IF usr_limit[ui] IS NOT NULL THEN user_room := usr_limit[ui] - usr_spent[ui] - usr_res[ui]; END IF;
    IF room < o_min[i] THEN
      o_granted[i] := 0; o_reason[i] := 'balance_insufficient';
      CONTINUE;
    END IF;
    IF key_room IS NOT NULL AND key_room < o_min[i] THEN
      o_granted[i] := 0; o_reason[i] := 'key_limit_exceeded';
      CONTINUE;
    END IF;
    IF user_room IS NOT NULL AND user_room < o_min[i] THEN
      o_granted[i] := 0; o_reason[i] := 'member_limit_exceeded';
      CONTINUE;
    END IF;
    g := LEAST(o_bound[i], room, COALESCE(key_room, o_bound[i]), COALESCE(user_room, o_bound[i]));
    org_res[oi] := org_res[oi] + g; org_dres[oi] := org_dres[oi] + g; org_touched[oi] := true;
    IF ki IS NOT NULL THEN key_res[ki] := key_res[ki] + g; key_dres[ki] := key_dres[ki] + g; key_touched[ki] := true; END IF;
    IF ui IS NOT NULL THEN usr_res[ui] := usr_res[ui] + g; usr_dres[ui] := usr_dres[ui] + g; usr_touched[ui] := true; END IF;
    o_granted[i] := g; o_new[i] := true;
  END LOOP;

  -- The writes, one statement per table. A key's or user's period is normalized once: with one p_now, doing it
  -- per item (as sy_reserve / sy_settle do) gives the same result.
  IF org_id IS NOT NULL THEN
    UPDATE organizations o SET reserved = o.reserved + org_dres[array_position(org_id, o.id)],
        balance = o.balance - org_dcharge[array_position(org_id, o.id)], spent = o.spent + org_dcharge[array_position(org_id, o.id)],
        updated_at = CASE WHEN org_closed[array_position(org_id, o.id)] THEN p_now ELSE o.updated_at END
     WHERE o.id = ANY (org_id) AND org_touched[array_position(org_id, o.id)];
  END IF;
  IF key_id IS NOT NULL THEN
    UPDATE api_keys k SET reserved = k.reserved + key_dres[array_position(key_id, k.id)],
        usage = k.usage + key_dcharge[array_position(key_id, k.id)],
        period_spent = sy_period_spent(k.limit_reset, k.period_start, k.period_spent, p_now) + key_dcharge[array_position(key_id, k.id)],
        period_start = sy_period_start(COALESCE(k.limit_reset, 'never'), p_now)
     WHERE k.id = ANY (key_id) AND key_touched[array_position(key_id, k.id)];
  END IF;
  IF usr_id IS NOT NULL THEN
    UPDATE users s SET reserved = s.reserved + usr_dres[array_position(usr_id, s.id)],
        period_spent = sy_period_spent(s.limit_reset, s.period_start, s.period_spent, p_now) + usr_dcharge[array_position(usr_id, s.id)],
        period_start = sy_period_start(COALESCE(s.limit_reset, 'never'), p_now)
     WHERE s.id = ANY (usr_id) AND usr_touched[array_position(usr_id, s.id)];
  END IF;
  IF n_c > 0 THEN
    UPDATE reservations r SET status = CASE WHEN d.rel THEN 'released'::"ReservationStatus" ELSE 'charged'::"ReservationStatus" END,
        charged = d.c, uncollected = d.unc, settled_at = p_now
      FROM unnest(c_id, c_release, c_charged, c_uncollected, c_settled) d(id, rel, c, unc, settled)
     WHERE r.generation_id = d.id AND d.settled AND r.generation_id = ANY (c_id);
  END IF;
  IF n_o > 0 THEN
    INSERT INTO reservations (generation_id, organization_id, api_key_id, user_id, amount, created_at)
      SELECT d.id, d.org, d.key, d.usr, d.g, p_now
        FROM unnest(o_id, o_org, o_key, o_user, o_granted, o_new) WITH ORDINALITY d(id, org, key, usr, g, new, ord)
       WHERE d.new ORDER BY d.ord;
  END IF;
  INSERT INTO ledger_entries (organization_id, api_key_id, user_id, generation_id, kind, amount, reserved_delta, created_at)
    SELECT e.org, e.key, e.usr, e.id, e.kind, e.amount, e.rdelta, p_now
      FROM (SELECT 1 AS part, d.ord, d.org, d.key, d.usr, d.id,
                   CASE WHEN d.rel THEN 'release'::"LedgerKind" ELSE 'charge'::"LedgerKind" END AS kind, -d.c AS amount, -d.amt AS rdelta
              FROM unnest(c_org, c_key, c_user, c_id, c_release, c_charged, c_amount, c_settled)
                   WITH ORDINALITY d(org, key, usr, id, rel, c, amt, settled, ord)
             WHERE d.settled
            UNION ALL
            SELECT 2, d.ord, d.org, d.key, d.usr, d.id, 'reserve'::"LedgerKind", 0, d.g
              FROM unnest(o_org, o_key, o_user, o_id, o_granted, o_new) WITH ORDINALITY d(org, key, usr, id, g, new, ord)
             WHERE d.new) e
     ORDER BY e.part, e.ord;

  IF n_o > 0 THEN
    -- Every granted open inserts its generation (also a replayed one, whose record may already be there).
    INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id,
        request_type, api_type, response_mode, status, reserved_amount, request, warnings, routing, call_back_url,
        source_generation_id, previous_response_id, trace_id, created_at)
      SELECT d.it->>'id', d.it->>'organization_id', d.it->>'api_key_id', d.it->>'user_id', d.it->>'model',
        NULLIF(d.it->>'unified_model_id', d.it->>'model'), d.it->>'request_type', d.it->>'api_type', d.it->>'response_mode', 'pending', d.g,
        COALESCE(d.it->'request', '{}'::jsonb), NULLIF(d.it->'warnings', 'null'::jsonb), NULLIF(d.it->'routing', 'null'::jsonb),
        d.it->>'call_back_url', d.it->>'source_generation_id', d.it->>'previous_response_id', d.it->>'trace_id', p_now
        FROM unnest(o_it, o_granted, o_reason) WITH ORDINALITY d(it, g, reason, ord)
       WHERE d.reason IS NULL AND (d.it->>'record') IS DISTINCT FROM 'false' ORDER BY d.ord
    ON CONFLICT ON CONSTRAINT generations_pkey DO NOTHING;
  END IF;

  IF n_c > 0 THEN
    -- A close writes the generation's ending unless it had already ended (then `applied` is false). The routing
    -- decision grows as the job runs, so an item's `routing` is merged into the stored object.
    WITH done AS (
      UPDATE generations g SET
        status = (d.it->>'status')::"GenerationStatus",
        client_cost = d.c,
        result = COALESCE(NULLIF(d.it->'result', 'null'::jsonb), g.result),
        usage = COALESCE(NULLIF(d.it->'usage', 'null'::jsonb), g.usage),
        error = COALESCE(NULLIF(d.it->'error', 'null'::jsonb), g.error),
        warnings = COALESCE(NULLIF(d.it->'warnings', 'null'::jsonb), g.warnings),
        routing = CASE WHEN jsonb_typeof(d.it->'routing') = 'object'
                       THEN COALESCE(g.routing, '{}'::jsonb) || (d.it->'routing') ELSE g.routing END,
        model = COALESCE(d.it->>'model', g.model),
        -- Null while it names the same model as `model`: kept once `model` becomes another (a fallback's).
        unified_model_id = CASE WHEN g.unified_model_id IS NULL AND d.it->>'model' <> g.model THEN g.model ELSE g.unified_model_id END,
        provider = COALESCE(d.it->>'provider', g.provider),
        final_endpoint_slug = COALESCE(d.it->>'final_endpoint_slug', g.final_endpoint_slug),
        finish_reason = COALESCE(d.it->>'finish_reason', g.finish_reason),
        attempts_count = COALESCE((d.it->>'attempts_count')::int, g.attempts_count),
        latency_ms = COALESCE((d.it->>'latency_ms')::int, g.latency_ms),
        queue_time_ms = COALESCE((d.it->>'queue_time_ms')::int, g.queue_time_ms),
        generation_time_ms = COALESCE((d.it->>'generation_time_ms')::int, g.generation_time_ms),
        upstream_id = COALESCE(d.it->>'upstream_id', g.upstream_id),
        is_cancelled = (d.it->>'status') = 'cancelled',
        completed_at = p_now
      FROM unnest(c_it, c_outcome, c_charged) d(it, outcome, c)
      -- A record still running whose reservation was settled (written so before this migration) ends too, at what was
      -- settled: nothing moves, and the generation is no longer one no close can end.
      WHERE g.id = d.it->>'id' AND g.id = ANY (c_id) AND d.outcome IN ('charged', 'released', 'not_found', 'already_settled')
        AND g.status IN ('pending', 'processing')
        AND (d.it->>'record') IS DISTINCT FROM 'false'
      RETURNING g.id)
    SELECT array_agg(done.id) INTO applied_ids FROM done;
    RETURN QUERY SELECT 'close'::text, d.id, NULL::numeric, NULL::text, d.outcome, d.c, COALESCE(d.id = ANY (applied_ids), false)
      FROM unnest(c_id, c_outcome, c_charged) WITH ORDINALITY d(id, outcome, c, ord) ORDER BY d.ord;
  END IF;
  RETURN QUERY SELECT 'open'::text, d.id, d.g, d.reason, NULL::text, NULL::numeric, NULL::boolean
    FROM unnest(o_id, o_granted, o_reason) WITH ORDINALITY d(id, g, reason, ord) ORDER BY d.ord;
END
$function$;
