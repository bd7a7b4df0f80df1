-- New terms for a key (a new limit or period, disabled, revoked) revoke its leases instead of releasing them at once
-- (docs/architecture.md "Leases", item 6). A process grants requests from its lease in memory, and their drawn opens
-- reach PostgreSQL later: releasing the whole lease at once took back the money of requests already granted, which
-- were then recorded with an empty reservation and, the new limit being 0, charged nothing although their replies had
-- shown a cost. A revoked lease stays held: drawn opens still move their bounds out of it, it is no longer renewed, and
-- its process, told at its next renewal (at once, when it served the change), draws nothing more from it and gives
-- back the undrawn rest once its drawn opens have committed. A process that died leaves it to the reaper's sweep once
-- expired, as any lease. The limits' `reserved` keep counting the lease until then: new requests under the new terms
-- see that money as taken, so no limit is exceeded by it and the balance never goes below zero.

ALTER TABLE "reservations" ADD COLUMN "revoked_at" TIMESTAMPTZ(3);

-- Revokes every lease of a key; returns how many. The organization is locked first, then the leases' rows in id order,
-- as every money function locks them.
CREATE FUNCTION sy_lease_revoke(p_key text, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE n integer;
BEGIN
  PERFORM 1 FROM organizations o WHERE o.id = (SELECT k.organization_id FROM api_keys k WHERE k.id = p_key) FOR UPDATE;
  UPDATE reservations r SET revoked_at = p_now
   WHERE r.generation_id IN (SELECT x.generation_id FROM reservations x
                              WHERE x.api_key_id = p_key AND x.expires_at IS NOT NULL AND x.status = 'held' AND x.revoked_at IS NULL
                              ORDER BY x.generation_id FOR UPDATE);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$$;

-- Keeps the process's leases alive, revoked ones excepted; returns those still held, each saying whether it is revoked
-- (a lease the reaper released is gone for good). A lease row a ledger batch holds right now is skipped, not waited for
-- (its expiry is renewed at the next call): the renewal takes no lock out of the money functions' order.
DROP FUNCTION sy_lease_renew(text[], timestamptz);
CREATE FUNCTION sy_lease_renew(p_ids text[], p_expires timestamptz)
RETURNS TABLE (id text, revoked boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  UPDATE reservations r SET expires_at = p_expires
   WHERE r.generation_id IN (SELECT x.generation_id FROM reservations x
                              WHERE x.generation_id = ANY (p_ids) AND x.status = 'held' AND x.expires_at IS NOT NULL
                                AND x.revoked_at IS NULL
                              FOR UPDATE SKIP LOCKED);
  RETURN QUERY SELECT x.generation_id, x.revoked_at IS NOT NULL FROM reservations x
                WHERE x.generation_id = ANY (p_ids) AND x.status = 'held' AND x.expires_at IS NOT NULL;
END
$$;
