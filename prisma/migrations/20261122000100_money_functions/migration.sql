-- The money core. Every reservation, charge and release is ONE call to one of these functions, so it is atomic
-- and costs one round trip on the hot path. Rows are locked in one fixed order (organization, key, user) so
-- concurrent calls never deadlock. Ledger entries are unique per (generation, kind): a settlement run twice
-- changes nothing the second time.

-- Start of the limit period that contains `at`. Periods start at 01:00 Moscow time (UTC+3, no DST since
-- 2014), i.e. 22:00 UTC the day before: shifting by +2 hours turns that instant into a UTC midnight.
CREATE FUNCTION sy_period_start(reset "LimitReset", at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE reset
    WHEN 'daily'   THEN (date_trunc('day',   (at AT TIME ZONE 'UTC') + interval '2 hours') - interval '2 hours') AT TIME ZONE 'UTC'
    WHEN 'weekly'  THEN (date_trunc('week',  (at AT TIME ZONE 'UTC') + interval '2 hours') - interval '2 hours') AT TIME ZONE 'UTC'
    WHEN 'monthly' THEN (date_trunc('month', (at AT TIME ZONE 'UTC') + interval '2 hours') - interval '2 hours') AT TIME ZONE 'UTC'
    ELSE '-infinity'::timestamptz
  END
$$;

-- Spend counted against a limit in the period containing `at` (a stale period counts as zero).
CREATE FUNCTION sy_period_spent(reset "LimitReset", period_start timestamptz, period_spent numeric, at timestamptz)
RETURNS numeric LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN period_start IS NOT DISTINCT FROM sy_period_start(reset, at) THEN period_spent ELSE 0 END
$$;

-- Reserve up to p_amount (at least p_min) for one generation.
-- Returns the granted amount, or a reason: balance_insufficient, key_limit_exceeded, member_limit_exceeded,
-- not_found. Calling it again for the same generation returns the existing reservation.
CREATE FUNCTION sy_reserve(p_generation_id text, p_org text, p_key text, p_user text,
                           p_amount numeric, p_min numeric, p_now timestamptz)
RETURNS TABLE (granted numeric, reason text)
LANGUAGE plpgsql AS $$
DECLARE
  o record; k record; u record;
  room numeric; key_room numeric := NULL; user_room numeric := NULL; g numeric;
  existing numeric;
BEGIN
  SELECT amount INTO existing FROM reservations WHERE generation_id = p_generation_id;
  IF FOUND THEN RETURN QUERY SELECT existing, NULL::text; RETURN; END IF;

  SELECT * INTO o FROM organizations WHERE id = p_org FOR UPDATE;
  IF NOT FOUND THEN RETURN QUERY SELECT 0::numeric, 'not_found'; RETURN; END IF;
  room := o.balance - o.reserved;

  IF p_key IS NOT NULL THEN
    SELECT * INTO k FROM api_keys WHERE id = p_key FOR UPDATE;
    IF FOUND THEN
      IF k."limit" IS NOT NULL THEN
        key_room := k."limit" - sy_period_spent(k.limit_reset, k.period_start, k.period_spent, p_now) - k.reserved;
      END IF;
    END IF;
  END IF;
  IF p_user IS NOT NULL THEN
    SELECT * INTO u FROM users WHERE id = p_user FOR UPDATE;
    IF FOUND THEN
      IF u."limit" IS NOT NULL THEN
        user_room := u."limit" - sy_period_spent(u.limit_reset, u.period_start, u.period_spent, p_now) - u.reserved;
      END IF;
    END IF;
  END IF;

  IF room < p_min THEN RETURN QUERY SELECT 0::numeric, 'balance_insufficient'; RETURN; END IF;
  IF key_room IS NOT NULL AND key_room < p_min THEN RETURN QUERY SELECT 0::numeric, 'key_limit_exceeded'; RETURN; END IF;
  IF user_room IS NOT NULL AND user_room < p_min THEN RETURN QUERY SELECT 0::numeric, 'member_limit_exceeded'; RETURN; END IF;

  g := LEAST(p_amount, room, COALESCE(key_room, p_amount), COALESCE(user_room, p_amount));

  UPDATE organizations SET reserved = reserved + g WHERE id = p_org;
  IF p_key IS NOT NULL THEN
    UPDATE api_keys SET reserved = reserved + g,
      period_spent = sy_period_spent(limit_reset, period_start, period_spent, p_now),
      period_start = sy_period_start(COALESCE(limit_reset, 'never'), p_now)
    WHERE id = p_key;
  END IF;
  IF p_user IS NOT NULL THEN
    UPDATE users SET reserved = reserved + g,
      period_spent = sy_period_spent(limit_reset, period_start, period_spent, p_now),
      period_start = sy_period_start(COALESCE(limit_reset, 'never'), p_now)
    WHERE id = p_user;
  END IF;
  INSERT INTO reservations (generation_id, organization_id, api_key_id, user_id, amount, created_at)
    VALUES (p_generation_id, p_org, p_key, p_user, g, p_now);
  INSERT INTO ledger_entries (organization_id, api_key_id, user_id, generation_id, kind, amount, reserved_delta, created_at)
    VALUES (p_org, p_key, p_user, p_generation_id, 'reserve', 0, g, p_now);
  RETURN QUERY SELECT g, NULL::text;
END
$$;

-- Settle a reservation: charge p_actual (0 with p_release = true to release it) and free the rest.
-- The charge never takes the balance below zero nor a limit above itself: what cannot be collected is
-- recorded as `uncollected` on the reservation. Returns the outcome: charged, released, already_settled,
-- not_found, and the amount charged.
CREATE FUNCTION sy_settle(p_generation_id text, p_actual numeric, p_release boolean, p_now timestamptz)
RETURNS TABLE (outcome text, charged numeric)
LANGUAGE plpgsql AS $$
DECLARE
  r record; o record; k record; u record;
  c numeric; extra numeric;
BEGIN
  SELECT * INTO r FROM reservations WHERE generation_id = p_generation_id;
  IF NOT FOUND THEN RETURN QUERY SELECT 'not_found'::text, 0::numeric; RETURN; END IF;

  -- Lock order as in sy_reserve: organization, key, user; the reservation row last.
  SELECT * INTO o FROM organizations WHERE id = r.organization_id FOR UPDATE;
  IF r.api_key_id IS NOT NULL THEN SELECT * INTO k FROM api_keys WHERE id = r.api_key_id FOR UPDATE; END IF;
  IF r.user_id IS NOT NULL THEN SELECT * INTO u FROM users WHERE id = r.user_id FOR UPDATE; END IF;
  SELECT * INTO r FROM reservations WHERE generation_id = p_generation_id FOR UPDATE;
  IF r.status <> 'held' THEN RETURN QUERY SELECT 'already_settled'::text, COALESCE(r.charged, 0); RETURN; END IF;

  c := CASE WHEN p_release THEN 0 ELSE GREATEST(p_actual, 0) END;
  IF c > r.amount THEN
    -- More than reserved: take the excess only from what is free everywhere.
    extra := o.balance - o.reserved;
    -- (nested IFs: plpgsql does not promise to short-circuit AND, and k/u may be unassigned)
    IF r.api_key_id IS NOT NULL THEN
      IF k."limit" IS NOT NULL THEN
        extra := LEAST(extra, k."limit" - sy_period_spent(k.limit_reset, k.period_start, k.period_spent, p_now) - k.reserved);
      END IF;
    END IF;
    IF r.user_id IS NOT NULL THEN
      IF u."limit" IS NOT NULL THEN
        extra := LEAST(extra, u."limit" - sy_period_spent(u.limit_reset, u.period_start, u.period_spent, p_now) - u.reserved);
      END IF;
    END IF;
    c := LEAST(c, r.amount + GREATEST(extra, 0));
  END IF;

  UPDATE organizations SET reserved = reserved - r.amount, balance = balance - c, spent = spent + c, updated_at = p_now
    WHERE id = r.organization_id;
  IF r.api_key_id IS NOT NULL THEN
    UPDATE api_keys SET reserved = reserved - r.amount, usage = usage + c,
      period_spent = sy_period_spent(limit_reset, period_start, period_spent, p_now) + c,
      period_start = sy_period_start(COALESCE(limit_reset, 'never'), p_now)
    WHERE id = r.api_key_id;
  END IF;
  IF r.user_id IS NOT NULL THEN
    UPDATE users SET reserved = reserved - r.amount,
      period_spent = sy_period_spent(limit_reset, period_start, period_spent, p_now) + c,
      period_start = sy_period_start(COALESCE(limit_reset, 'never'), p_now)
    WHERE id = r.user_id;
  END IF;
  UPDATE reservations SET status = CASE WHEN p_release THEN 'released'::"ReservationStatus" ELSE 'charged'::"ReservationStatus" END,
    charged = c, uncollected = GREATEST(p_actual - c, 0), settled_at = p_now
    WHERE generation_id = p_generation_id;
  INSERT INTO ledger_entries (organization_id, api_key_id, user_id, generation_id, kind, amount, reserved_delta, created_at)
    VALUES (r.organization_id, r.api_key_id, r.user_id, p_generation_id,
            CASE WHEN p_release THEN 'release'::"LedgerKind" ELSE 'charge'::"LedgerKind" END, -c, -r.amount, p_now);
  RETURN QUERY SELECT CASE WHEN p_release THEN 'released' ELSE 'charged' END, c;
END
$$;

-- Add money to an organization's balance, with its ledger entry.
CREATE FUNCTION sy_topup(p_org text, p_amount numeric, p_now timestamptz) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE b numeric;
BEGIN
  IF p_amount <= 0 THEN RAISE EXCEPTION 'top-up amount must be positive'; END IF;
  UPDATE organizations SET balance = balance + p_amount, updated_at = p_now WHERE id = p_org RETURNING balance INTO b;
  IF NOT FOUND THEN RETURN NULL; END IF;
  INSERT INTO ledger_entries (organization_id, kind, amount, created_at) VALUES (p_org, 'topup', p_amount, p_now);
  RETURN b;
END
$$;
