-- Making a partition takes the locks in the ledger's order (docs/architecture.md "Partitions"). Attaching a month of
-- generations adds its foreign key, which takes SHARE ROW EXCLUSIVE on organizations, and takes ACCESS EXCLUSIVE on
-- the default partition. A settlement locks organizations first and reaches generations (every partition, the
-- default too) after: taken the other way round, a settlement holding organizations waits on the default partition
-- while the attach holding the default partition waits on organizations, a deadlock that failed a request at a
-- process's start (its first keep-partitions run). Detaching a month takes the same locks. So both lock the
-- referenced tables first, in oid order: a settlement then waits for the attach or detach (milliseconds for an empty
-- month) or it for the settlement, never both.
CREATE FUNCTION sy_partition_lock_references(p_table text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE ref regclass;
BEGIN
  FOR ref IN SELECT DISTINCT c.confrelid::regclass FROM pg_constraint c
              WHERE c.conrelid = format('public.%I', p_table)::regclass AND c.contype = 'f' ORDER BY 1
  LOOP
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', ref);
  END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION sy_partition_ensure(p_table text, p_at timestamptz, p_unit text DEFAULT 'month') RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  lo timestamptz := date_trunc(p_unit, p_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  hi timestamptz := (date_trunc(p_unit, p_at AT TIME ZONE 'UTC') + ('1 ' || p_unit)::interval) AT TIME ZONE 'UTC';
  part text := CASE p_unit WHEN 'month' THEN format('%s_p%s', p_table, to_char(lo AT TIME ZONE 'UTC', 'YYYYMM'))
                           WHEN 'day' THEN format('%s_d%s', p_table, to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD')) END;
BEGIN
  IF part IS NULL THEN RAISE EXCEPTION 'sy_partition_ensure: unit % (month or day)', p_unit; END IF;
  PERFORM pg_advisory_xact_lock(hashtext('sy_partition ' || p_table));
  IF to_regclass(format('public.%I', part)) IS NOT NULL THEN RETURN false; END IF;
  PERFORM sy_partition_lock_references(p_table);
  EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part, p_table);
  IF to_regclass(format('public.%I', p_table || '_default')) IS NOT NULL THEN
    EXECUTE format('WITH moved AS (DELETE FROM public.%I WHERE created_at >= $1 AND created_at < $2 RETURNING *) INSERT INTO public.%I SELECT * FROM moved',
                   p_table || '_default', part) USING lo, hi;
  END IF;
  EXECUTE format('ALTER TABLE public.%I ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)', p_table, part, lo, hi);
  RETURN true;
END
$$;

CREATE OR REPLACE FUNCTION sy_partition_detach(p_table text, p_before timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE r record; hi timestamptz; locked boolean := false;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('sy_partition ' || p_table));
  FOR r IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = format('public.%I', p_table)::regclass
              AND (c.relname ~ ('^' || p_table || '_p[0-9]{6}$') OR c.relname ~ ('^' || p_table || '_d[0-9]{8}$'))
            ORDER BY c.relname
  LOOP
    hi := CASE WHEN r.relname ~ '_p[0-9]{6}$'
               THEN (to_date(right(r.relname, 6), 'YYYYMM') + interval '1 month')::timestamp AT TIME ZONE 'UTC'
               ELSE (to_date(right(r.relname, 8), 'YYYYMMDD') + interval '1 day')::timestamp AT TIME ZONE 'UTC' END;
    CONTINUE WHEN hi > p_before;
    IF NOT locked THEN PERFORM sy_partition_lock_references(p_table); locked := true; END IF;
    EXECUTE format('ALTER TABLE public.%I DETACH PARTITION public.%I', p_table, r.relname);
    RETURN NEXT r.relname;
  END LOOP;
END
$$;
