-- The ledger's pair in one pass (issue 12). At concurrency 1 every batch is a pair: one request's open and the previous
-- request's close, of one organization (sy_ledger_batch's dispatcher checks that). The pair ran sy_settle, then
-- sy_reserve: the organization row and the key row each locked, read and updated twice, two ledger inserts, two nested
-- function calls: 17 statements. Here the pair locks each row once, in the same order (organization; the close's key
-- and user; the close's reservation; the open's key and user when they are others), works out the charge and then the
-- grant in memory with exactly the rules of sy_settle and sy_reserve (the grant sees the balance and the limits the
-- charge left, each value rounded to its column's scale as a write and a read in between would have), and writes each
-- row once: 12 statements. The answers, the rows and the ledger are those of sy_settle then sy_reserve, item for item
-- (test/billing/ledger-batch.test.ts checks the pair against the set-based function, which reproduces those rules).
-- sy_settle and sy_reserve stay as they are: the single-item paths.
CREATE OR REPLACE FUNCTION sy_ledger_pair(p_open jsonb, p_close jsonb, p_now timestamptz)
RETURNS TABLE (kind text, id text, granted numeric, reason text, existing_id text, outcome text, charged numeric, applied boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  c_id text := p_close->>'id'; o_id text := p_open->>'id';
  c_release boolean := NOT COALESCE(p_close ? 'cost', false); c_actual numeric := COALESCE((p_close->>'cost')::numeric, 0);
  -- the close's reservation
  r_amount numeric; r_status "ReservationStatus"; r_charged numeric; r_found boolean := false; settled boolean := false; c numeric := 0; extra numeric; c_outcome text; done boolean;
  -- the organization: locked once
  org text; o_found boolean := false; o_bal numeric; o_res numeric; o_spent numeric;
  -- the close's key and user (ck, cu) and the open's (ok, ou): id, found, limit, reset, period start and spent, reserved
  ck text; ck_found boolean := false; ck_limit numeric; ck_reset "LimitReset"; ck_start timestamptz; ck_spent numeric; ck_res numeric; ck_usage numeric;
  cu text; cu_found boolean := false; cu_limit numeric; cu_reset "LimitReset"; cu_start timestamptz; cu_spent numeric; cu_res numeric;
  ok text := p_open->>'api_key_id'; ok_found boolean := false; ok_limit numeric; ok_reset "LimitReset"; ok_start timestamptz; ok_spent numeric; ok_res numeric; ok_usage numeric;
  ou text := p_open->>'user_id'; ou_found boolean := false; ou_limit numeric; ou_reset "LimitReset"; ou_start timestamptz; ou_spent numeric; ou_res numeric;
  -- the open
  existing numeric; o_bound numeric := (p_open->>'bound')::numeric; o_min numeric := (p_open->>'minimum')::numeric;
  room numeric; key_room numeric; user_room numeric; gr numeric; o_reason text; reserving boolean := false;
BEGIN
  IF p_close IS NOT NULL THEN
    SELECT organization_id, api_key_id, user_id INTO org, ck, cu FROM reservations WHERE generation_id = c_id;
    r_found := FOUND;
    IF r_found AND p_open IS NOT NULL AND org <> p_open->>'organization_id' THEN
      RAISE EXCEPTION 'sy_ledger_pair: the close and the open belong to two organizations';
    END IF;
  END IF;
  IF p_open IS NOT NULL THEN
    SELECT amount INTO existing FROM reservations WHERE generation_id = o_id;
    reserving := NOT FOUND;
  END IF;

  -- Locks: the organization first (sy_settle and sy_reserve both take it first), then the close's key, user and reservation.
  IF r_found OR reserving THEN
    IF NOT r_found THEN org := p_open->>'organization_id'; END IF;
    SELECT balance, reserved, spent INTO o_bal, o_res, o_spent FROM organizations WHERE id = org FOR UPDATE;
    o_found := FOUND;
  END IF;
  IF r_found THEN
    IF ck IS NOT NULL THEN
      SELECT "limit", limit_reset, period_start, period_spent, reserved, usage INTO ck_limit, ck_reset, ck_start, ck_spent, ck_res, ck_usage
        FROM api_keys WHERE id = ck FOR UPDATE;
      ck_found := FOUND;
    END IF;
    IF cu IS NOT NULL THEN
      SELECT "limit", limit_reset, period_start, period_spent, reserved INTO cu_limit, cu_reset, cu_start, cu_spent, cu_res
        FROM users WHERE id = cu FOR UPDATE;
      cu_found := FOUND;
    END IF;
    SELECT amount, status, charged INTO r_amount, r_status, r_charged FROM reservations WHERE generation_id = c_id FOR UPDATE;

    -- sy_settle's rules.
    IF r_status <> 'held' THEN
      c_outcome := 'already_settled'; c := COALESCE(r_charged, 0);
    ELSE
      settled := true;
      c_outcome := CASE WHEN c_release THEN 'released' ELSE 'charged' END;
      c := CASE WHEN c_release THEN 0 ELSE GREATEST(c_actual, 0) END;
      IF c > r_amount THEN
        extra := o_bal - o_res;
        IF ck IS NOT NULL THEN
          IF ck_limit IS NOT NULL THEN extra := LEAST(extra, ck_limit - sy_period_spent(ck_reset, ck_start, ck_spent, p_now) - ck_res); END IF;
        END IF;
        IF cu IS NOT NULL THEN
          IF cu_limit IS NOT NULL THEN extra := LEAST(extra, cu_limit - sy_period_spent(cu_reset, cu_start, cu_spent, p_now) - cu_res); END IF;
        END IF;
        c := LEAST(c, r_amount + GREATEST(extra, 0));
      END IF;
      -- As the row would hold it after sy_settle's update.
      o_res := (o_res - r_amount)::numeric(30,10); o_bal := (o_bal - c)::numeric(30,10); o_spent := (o_spent + c)::numeric(30,10);
      IF ck_found THEN
        ck_res := (ck_res - r_amount)::numeric(30,10); ck_usage := (ck_usage + c)::numeric(30,10);
        ck_spent := (sy_period_spent(ck_reset, ck_start, ck_spent, p_now) + c)::numeric(30,10);
        ck_start := sy_period_start(COALESCE(ck_reset, 'never'), p_now);
      END IF;
      IF cu_found THEN
        cu_res := (cu_res - r_amount)::numeric(30,10);
        cu_spent := (sy_period_spent(cu_reset, cu_start, cu_spent, p_now) + c)::numeric(30,10);
        cu_start := sy_period_start(COALESCE(cu_reset, 'never'), p_now);
      END IF;
    END IF;
  ELSIF p_close IS NOT NULL THEN
    c_outcome := 'not_found';
  END IF;

  IF reserving AND NOT o_found THEN
    reserving := false; gr := 0; o_reason := 'not_found';
  END IF;
  IF reserving THEN
    -- The open's key and user: the close's rows as the charge left them, or locked now.
    IF ok IS NOT NULL THEN
      IF ok IS NOT DISTINCT FROM ck THEN
        ok_found := ck_found; ok_limit := ck_limit; ok_reset := ck_reset; ok_start := ck_start; ok_spent := ck_spent; ok_res := ck_res; ok_usage := ck_usage;
      ELSE
        SELECT "limit", limit_reset, period_start, period_spent, reserved, usage INTO ok_limit, ok_reset, ok_start, ok_spent, ok_res, ok_usage
          FROM api_keys WHERE id = ok FOR UPDATE;
        ok_found := FOUND;
      END IF;
    END IF;
    IF ou IS NOT NULL THEN
      IF ou IS NOT DISTINCT FROM cu THEN
        ou_found := cu_found; ou_limit := cu_limit; ou_reset := cu_reset; ou_start := cu_start; ou_spent := cu_spent; ou_res := cu_res;
      ELSE
        SELECT "limit", limit_reset, period_start, period_spent, reserved INTO ou_limit, ou_reset, ou_start, ou_spent, ou_res
          FROM users WHERE id = ou FOR UPDATE;
        ou_found := FOUND;
      END IF;
    END IF;

    -- sy_reserve's rules.
    room := o_bal - o_res;
    IF ok_found AND ok_limit IS NOT NULL THEN key_room := ok_limit - sy_period_spent(ok_reset, ok_start, ok_spent, p_now) - ok_res; END IF;
    IF ou_found AND ou_limit IS NOT NULL THEN user_room := ou_limit - sy_period_spent(ou_reset, ou_start, ou_spent, p_now) - ou_res; END IF;
    IF room < o_min THEN o_reason := 'balance_insufficient';
    ELSIF key_room IS NOT NULL AND key_room < o_min THEN o_reason := 'key_limit_exceeded';
    ELSIF user_room IS NOT NULL AND user_room < o_min THEN o_reason := 'member_limit_exceeded';
    END IF;
    IF o_reason IS NOT NULL THEN
      reserving := false; gr := 0;
    ELSE
      gr := LEAST(o_bound, room, COALESCE(key_room, o_bound), COALESCE(user_room, o_bound));
      o_res := o_res + gr;
      IF ok_found THEN
        ok_res := ok_res + gr;
        ok_spent := sy_period_spent(ok_reset, ok_start, ok_spent, p_now);
        ok_start := sy_period_start(COALESCE(ok_reset, 'never'), p_now);
      END IF;
      IF ou_found THEN
        ou_res := ou_res + gr;
        ou_spent := sy_period_spent(ou_reset, ou_start, ou_spent, p_now);
        ou_start := sy_period_start(COALESCE(ou_reset, 'never'), p_now);
      END IF;
    END IF;
  ELSIF p_open IS NOT NULL AND o_reason IS NULL THEN
    gr := existing;
  END IF;

  -- Each row written once. A key or user the charge and the grant share carries both in the grant's values.
  IF settled OR reserving THEN
    UPDATE organizations SET balance = o_bal, reserved = o_res, spent = o_spent,
      updated_at = CASE WHEN settled THEN p_now ELSE updated_at END
    WHERE id = org;
  END IF;
  IF settled AND ck_found AND NOT (reserving AND ok_found AND ok = ck) THEN
    UPDATE api_keys SET reserved = ck_res, usage = ck_usage, period_spent = ck_spent, period_start = ck_start WHERE id = ck;
  END IF;
  IF reserving AND ok_found THEN
    UPDATE api_keys SET reserved = ok_res, usage = ok_usage, period_spent = ok_spent, period_start = ok_start WHERE id = ok;
  END IF;
  IF settled AND cu_found AND NOT (reserving AND ou_found AND ou = cu) THEN
    UPDATE users SET reserved = cu_res, period_spent = cu_spent, period_start = cu_start WHERE id = cu;
  END IF;
  IF reserving AND ou_found THEN
    UPDATE users SET reserved = ou_res, period_spent = ou_spent, period_start = ou_start WHERE id = ou;
  END IF;
  IF settled THEN
    UPDATE reservations SET status = CASE WHEN c_release THEN 'released'::"ReservationStatus" ELSE 'charged'::"ReservationStatus" END,
      charged = c, uncollected = GREATEST(c_actual - c, 0), settled_at = p_now
    WHERE generation_id = c_id;
  END IF;
  IF reserving THEN
    INSERT INTO reservations (generation_id, organization_id, api_key_id, user_id, amount, created_at)
      VALUES (o_id, org, ok, ou, gr, p_now);
  END IF;
  IF settled OR reserving THEN
    -- The close's entry first, as sy_settle wrote it before sy_reserve.
    INSERT INTO ledger_entries (organization_id, api_key_id, user_id, generation_id, kind, amount, reserved_delta, created_at)
      SELECT v.org, v.key, v.usr, v.gen, v.kind, v.amount, v.delta, p_now
        FROM (VALUES (1, settled, org, ck, cu, c_id,
                      CASE WHEN c_release THEN 'release'::"LedgerKind" ELSE 'charge'::"LedgerKind" END, -c, -r_amount),
                     (2, reserving, org, ok, ou, o_id, 'reserve'::"LedgerKind", 0::numeric, gr)) v(n, keep, org, key, usr, gen, kind, amount, delta)
       WHERE v.keep ORDER BY v.n;
  END IF;

  IF p_close IS NOT NULL THEN
    done := false;
    IF c_outcome IN ('charged', 'released', 'not_found') THEN
      -- The ending, exactly as sy_ledger_apply writes it (the routing object is merged into the stored one).
      UPDATE generations g SET
        status = (p_close->>'status')::"GenerationStatus",
        client_cost = c,
        result = COALESCE(NULLIF(p_close->'result', 'null'::jsonb), g.result),
        usage = COALESCE(NULLIF(p_close->'usage', 'null'::jsonb), g.usage),
        error = COALESCE(NULLIF(p_close->'error', 'null'::jsonb), g.error),
        warnings = COALESCE(NULLIF(p_close->'warnings', 'null'::jsonb), g.warnings),
        routing = CASE WHEN jsonb_typeof(p_close->'routing') = 'object'
                       THEN COALESCE(g.routing, '{}'::jsonb) || (p_close->'routing') ELSE g.routing END,
        model = COALESCE(p_close->>'model', g.model),
        provider = COALESCE(p_close->>'provider', g.provider),
        final_endpoint_slug = COALESCE(p_close->>'final_endpoint_slug', g.final_endpoint_slug),
        finish_reason = COALESCE(p_close->>'finish_reason', g.finish_reason),
        attempts_count = COALESCE((p_close->>'attempts_count')::int, g.attempts_count),
        latency_ms = COALESCE((p_close->>'latency_ms')::int, g.latency_ms),
        queue_time_ms = COALESCE((p_close->>'queue_time_ms')::int, g.queue_time_ms),
        generation_time_ms = COALESCE((p_close->>'generation_time_ms')::int, g.generation_time_ms),
        upstream_id = COALESCE(p_close->>'upstream_id', g.upstream_id),
        is_cancelled = (p_close->>'status') = 'cancelled',
        completed_at = p_now
      WHERE g.id = c_id AND g.status IN ('pending', 'processing')
      RETURNING true INTO done;
    END IF;
    kind := 'close'; id := c_id; granted := NULL; reason := NULL; existing_id := NULL;
    outcome := c_outcome; charged := c; applied := COALESCE(done, false);
    RETURN NEXT;
  END IF;
  IF p_open IS NOT NULL THEN
    IF o_reason IS NULL THEN
      -- A granted open inserts its generation (also one whose reservation already existed), as sy_ledger_apply does.
      INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id, model_display_name,
          request_type, api_type, response_mode, status, reserved_amount, request, warnings, routing, call_back_url,
          source_generation_id, previous_response_id, trace_id, created_at)
        VALUES (o_id, p_open->>'organization_id', ok, ou, p_open->>'model',
          p_open->>'unified_model_id', p_open->>'model_display_name', p_open->>'request_type', p_open->>'api_type',
          p_open->>'response_mode', 'pending', gr, COALESCE(p_open->'request', '{}'::jsonb),
          NULLIF(p_open->'warnings', 'null'::jsonb), NULLIF(p_open->'routing', 'null'::jsonb), p_open->>'call_back_url',
          p_open->>'source_generation_id', p_open->>'previous_response_id', p_open->>'trace_id', p_now)
      ON CONFLICT ON CONSTRAINT generations_pkey DO NOTHING;
    END IF;
    kind := 'open'; id := o_id; granted := gr; reason := o_reason; existing_id := NULL;
    outcome := NULL; charged := NULL; applied := NULL;
    RETURN NEXT;
  END IF;
END
$$;
