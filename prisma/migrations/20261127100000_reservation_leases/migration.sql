-- Reservation leases (issue 12; docs/architecture.md "Leases"). A process reserves, ahead of time, room for a few
-- requests of one caller (organization, key, member): one reservation row, taken with sy_reserve's rules, whose id is
-- the lease's ('lease_…'), not a generation's. A request the lease covers is granted in the process's memory at once
-- and its provider is called while its generation is recorded: its open ("drawn") moves its bound from the lease's
-- reservation to its own, in the same batches as every other open and close. The organization's, key's and member's
-- `reserved` already count the lease, so a draw changes none of them, and nothing can be drawn that sy_reserve did
-- not grant. A lease ends through sy_settle (release), which frees what is left of it; a lease its process stopped
-- renewing (the process died) is released by the reaper once `expires_at` has passed.

ALTER TABLE "reservations" ADD COLUMN "expires_at" TIMESTAMPTZ(3);
CREATE INDEX "reservations_lease_expiry_idx" ON "reservations"("expires_at") WHERE "expires_at" IS NOT NULL;

-- Takes a lease of p_amount, but only while the caller's room (the balance less what is reserved, and each limit's
-- headroom) is at least p_headroom: near its end the money goes to requests one by one, never to a lease another
-- process would sit on. Returns the amount (p_amount) or NULL with the reason ('thin' or sy_reserve's).
CREATE FUNCTION sy_lease_take(p_id text, p_org text, p_key text, p_user text, p_amount numeric, p_headroom numeric,
                              p_expires timestamptz, p_now timestamptz)
RETURNS TABLE (granted numeric, reason text)
LANGUAGE plpgsql AS $$
DECLARE room numeric; lim_room numeric; r record;
BEGIN
  SELECT o.balance - o.reserved INTO room FROM organizations o WHERE o.id = p_org;
  IF NOT FOUND THEN RETURN QUERY SELECT NULL::numeric, 'not_found'::text; RETURN; END IF;
  IF p_key IS NOT NULL THEN
    SELECT k."limit" - sy_period_spent(k.limit_reset, k.period_start, k.period_spent, p_now) - k.reserved
      INTO lim_room FROM api_keys k WHERE k.id = p_key;
    room := LEAST(room, COALESCE(lim_room, room));
  END IF;
  IF p_user IS NOT NULL THEN
    lim_room := NULL;
    SELECT u."limit" - sy_period_spent(u.limit_reset, u.period_start, u.period_spent, p_now) - u.reserved
      INTO lim_room FROM users u WHERE u.id = p_user;
    room := LEAST(room, COALESCE(lim_room, room));
  END IF;
  -- (The room read above is a heuristic; sy_reserve below decides, under its locks, with the exact rules.)
  IF room < p_headroom THEN RETURN QUERY SELECT NULL::numeric, 'thin'::text; RETURN; END IF;
  SELECT * INTO r FROM sy_reserve(p_id, p_org, p_key, p_user, p_amount, p_amount, p_now);
  IF r.reason IS NOT NULL THEN RETURN QUERY SELECT NULL::numeric, r.reason; RETURN; END IF;
  UPDATE reservations SET expires_at = p_expires WHERE generation_id = p_id;
  RETURN QUERY SELECT r.granted, NULL::text;
END
$$;

-- Keeps the process's leases alive; returns those still held (a lease the reaper released is gone for good). A lease
-- row a ledger batch holds right now is skipped, not waited for (its expiry is renewed at the next call): the renewal
-- takes no lock out of the money functions' order.
CREATE FUNCTION sy_lease_renew(p_ids text[], p_expires timestamptz)
RETURNS TABLE (id text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  UPDATE reservations r SET expires_at = p_expires
   WHERE r.generation_id IN (SELECT x.generation_id FROM reservations x
                              WHERE x.generation_id = ANY (p_ids) AND x.status = 'held' AND x.expires_at IS NOT NULL
                              FOR UPDATE SKIP LOCKED);
  RETURN QUERY SELECT x.generation_id FROM reservations x
                WHERE x.generation_id = ANY (p_ids) AND x.status = 'held' AND x.expires_at IS NOT NULL;
END
$$;

-- Releases the leases whose process stopped renewing them; returns how many.
CREATE FUNCTION sy_lease_sweep(p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE l text; n integer := 0;
BEGIN
  FOR l IN SELECT generation_id FROM reservations WHERE expires_at < p_now AND status = 'held' ORDER BY generation_id LOOP
    PERFORM sy_settle(l, 0, true, p_now);
    n := n + 1;
  END LOOP;
  RETURN n;
END
$$;

-- Drawn opens: each moves its bound from its lease's reservation to its own and records its generation, as a granted
-- open does (the same row; `reserved_amount` its bound). Idempotent: an open whose reservation exists grants what it
-- holds. A lease that is gone or short (released by the reaper while its process stood still) grants nothing: the
-- generation is recorded with an empty reservation, and its close charges only what the balance and limits then
-- allow, as sy_settle does for any cost above a reservation. The reserve entry's reserved_delta is 0: the money was
-- already counted as reserved when the lease was taken. The organizations are locked first, as by every money
-- function (then the leases' rows): the generation's insert takes a key-share lock on its organization, which would
-- otherwise wait, holding a lease row, on a batch that holds the organization and waits for that lease row.
CREATE FUNCTION sy_ledger_drawn(p_drawn jsonb, p_now timestamptz)
RETURNS TABLE (kind text, id text, granted numeric, reason text, existing_id text, outcome text, charged numeric, applied boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE d jsonb; gr numeric; b numeric;
BEGIN
  PERFORM 1 FROM organizations o
   WHERE o.id IN (SELECT DISTINCT value->>'organization_id' FROM jsonb_array_elements(p_drawn))
   ORDER BY o.id FOR UPDATE;
  FOR d IN SELECT value FROM jsonb_array_elements(p_drawn) ORDER BY value->>'lease', value->>'id' LOOP
    SELECT r.amount INTO gr FROM reservations r WHERE r.generation_id = d->>'id';
    IF NOT FOUND THEN
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
    INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id, model_display_name,
        request_type, api_type, response_mode, status, reserved_amount, request, warnings, routing, call_back_url,
        source_generation_id, previous_response_id, trace_id, created_at)
      VALUES (d->>'id', d->>'organization_id', d->>'api_key_id', d->>'user_id', d->>'model',
        d->>'unified_model_id', d->>'model_display_name', d->>'request_type', d->>'api_type',
        d->>'response_mode', 'pending', gr, COALESCE(d->'request', '{}'::jsonb),
        NULLIF(d->'warnings', 'null'::jsonb), NULLIF(d->'routing', 'null'::jsonb), d->>'call_back_url',
        d->>'source_generation_id', d->>'previous_response_id', d->>'trace_id', p_now)
    ON CONFLICT ON CONSTRAINT generations_pkey DO NOTHING;
    kind := 'drawn'; id := d->>'id'; granted := gr; reason := NULL; existing_id := NULL;
    outcome := NULL; charged := NULL; applied := NULL;
    RETURN NEXT;
  END LOOP;
END
$$;

-- A batch with drawn opens: the other items first (they lock organizations, keys and members before reservation rows,
-- as every money function does), then the drawn ones (their leases' reservation rows only).
CREATE FUNCTION sy_ledger_batch(p_opens jsonb, p_closes jsonb, p_drawn jsonb, p_now timestamptz)
RETURNS TABLE (kind text, id text, granted numeric, reason text, existing_id text, outcome text, charged numeric, applied boolean)
LANGUAGE plpgsql AS $$
BEGIN
  IF jsonb_array_length(p_opens) > 0 OR jsonb_array_length(p_closes) > 0 THEN
    RETURN QUERY SELECT * FROM sy_ledger_batch(p_opens, p_closes, p_now);
  END IF;
  RETURN QUERY SELECT * FROM sy_ledger_drawn(p_drawn, p_now);
END
$$;
