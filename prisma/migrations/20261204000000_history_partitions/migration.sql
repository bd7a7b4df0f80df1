-- generations and ledger_entries in monthly partitions (declarative, by created_at, UTC months): docs/architecture.md
-- "Partitions", docs/decisions.md section 9. A month is `<table>_pYYYYMM`; `<table>_default` takes a row no month
-- holds yet (a clock far off), so an insert never fails for a missing month. The maintenance job (keep-partitions)
-- creates the months ahead and retires generations' months past HISTORY_RETENTION_DAYS; ledger months are never
-- dropped. A primary key of a partitioned table holds its partition key: generations (id, created_at), ledger_entries
-- (id, created_at); a trigger keeps a generation's id unique (an open replayed later must not insert it twice).
--
-- Upgrade: an existing table's rows are copied into the partitions in this migration's transaction (the indexes are
-- built after the copy), so the service stops for it: a maintenance window, measured in bench/README.md.

-- Creates p_table's partition for the month (p_unit 'month': `<table>_pYYYYMM`) or the day ('day': `<table>_dYYYYMMDD`)
-- holding p_at unless it exists; rows the default partition holds for that range move into it. True when created.
CREATE FUNCTION sy_partition_ensure(p_table text, p_at timestamptz, p_unit text DEFAULT 'month') RETURNS boolean
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
  EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part, p_table);
  IF to_regclass(format('public.%I', p_table || '_default')) IS NOT NULL THEN
    EXECUTE format('WITH moved AS (DELETE FROM public.%I WHERE created_at >= $1 AND created_at < $2 RETURNING *) INSERT INTO public.%I SELECT * FROM moved',
                   p_table || '_default', part) USING lo, hi;
  END IF;
  EXECUTE format('ALTER TABLE public.%I ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)', p_table, part, lo, hi);
  RETURN true;
END
$$;

-- Detaches p_table's month (or day) partitions that end at or before p_before (whole partitions only; the default
-- partition stays) and returns their names: the caller drops them in a transaction of its own, so the table's lock
-- (DETACH takes an ACCESS EXCLUSIVE one) is held for the detach alone, not for the unlinking of gigabytes of files.
CREATE FUNCTION sy_partition_detach(p_table text, p_before timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE r record; hi timestamptz;
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
    EXECUTE format('ALTER TABLE public.%I DETACH PARTITION public.%I', p_table, r.relname);
    RETURN NEXT r.relname;
  END LOOP;
END
$$;

-- A generation's id stays unique across months: an insert of an id recorded within the week before (an open replayed
-- with a later p_now) is skipped, as ON CONFLICT ... DO NOTHING skipped it when the key was the id alone. The week
-- bounds the lookup to the one or two months it can be in.
CREATE FUNCTION sy_generation_id_once() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM generations g WHERE g.id = NEW.id
              AND g.created_at >= NEW.created_at - interval '7 days' AND g.created_at <= NEW.created_at + interval '1 day') THEN
    RETURN NULL;
  END IF;
  RETURN NEW;
END
$$;

-- Rebuilds p_table as a table partitioned by created_at with the same columns, defaults, foreign keys and indexes
-- (p_unique_to_plain: unique indexes made plain, since a unique index there must hold created_at), copying its rows.
CREATE FUNCTION sy_partition_table(p_table text, p_pkey text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  old text := p_table || '_unpartitioned';
  idx text[]; fks text[]; d text; m timestamptz;
BEGIN
  EXECUTE format('ALTER TABLE public.%I RENAME TO %I', p_table, old);
  SELECT coalesce(array_agg(indexdef ORDER BY indexname), '{}') INTO idx FROM pg_indexes
   WHERE schemaname = 'public' AND tablename = old AND indexname <> p_table || '_pkey';
  SELECT coalesce(array_agg(format('ALTER TABLE public.%I ADD CONSTRAINT %I %s', p_table, conname, pg_get_constraintdef(oid)) ORDER BY conname), '{}') INTO fks
    FROM pg_constraint WHERE conrelid = format('public.%I', old)::regclass AND contype = 'f';
  -- The old names are free for the new table's.
  FOR d IN SELECT conname FROM pg_constraint WHERE conrelid = format('public.%I', old)::regclass AND contype IN ('p', 'u', 'f') LOOP
    EXECUTE format('ALTER TABLE public.%I DROP CONSTRAINT %I', old, d);
  END LOOP;
  FOR d IN SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename = old LOOP
    EXECUTE format('DROP INDEX public.%I', d);
  END LOOP;
  EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (created_at)', p_table, old);
  EXECUTE format('CREATE TABLE public.%I PARTITION OF public.%I DEFAULT', p_table || '_default', p_table);
  -- A month for every month the rows are in, and this month and the next two.
  FOR m IN EXECUTE format('SELECT DISTINCT date_trunc(''month'', created_at AT TIME ZONE ''UTC'') AT TIME ZONE ''UTC'' FROM public.%I', old) LOOP
    PERFORM sy_partition_ensure(p_table, m);
  END LOOP;
  FOR i IN 0..2 LOOP PERFORM sy_partition_ensure(p_table, now() + make_interval(months => i)); END LOOP;
  EXECUTE format('INSERT INTO public.%I SELECT * FROM public.%I', p_table, old);
  EXECUTE format('ALTER TABLE public.%I ADD CONSTRAINT %I PRIMARY KEY (%s)', p_table, p_table || '_pkey', p_pkey);
  FOREACH d IN ARRAY idx LOOP
    EXECUTE replace(replace(d, 'CREATE UNIQUE INDEX', 'CREATE INDEX'), format(' ON public.%s ', old), format(' ON public.%s ', p_table));
  END LOOP;
  FOREACH d IN ARRAY fks LOOP EXECUTE d; END LOOP;
  EXECUTE format('DROP TABLE public.%I', old);
END
$$;

-- ledger_entries' id comes from its sequence, owned by the old table's column until it is moved.
ALTER SEQUENCE ledger_entries_id_seq OWNED BY NONE;
SELECT sy_partition_table('generations', 'id, created_at');
SELECT sy_partition_table('ledger_entries', 'id, created_at');
ALTER SEQUENCE ledger_entries_id_seq OWNED BY ledger_entries.id;
DROP FUNCTION sy_partition_table(text, text);

CREATE TRIGGER generations_id_once BEFORE INSERT ON generations FOR EACH ROW EXECUTE FUNCTION sy_generation_id_once();

-- The reaper's read: the generations not ended yet (an ended one has completed_at), oldest first, in a few pages.
CREATE INDEX "generations_unended_created_at_idx" ON "generations"("created_at") WHERE "completed_at" IS NULL;

-- Not unique any more (a unique index of a partitioned table holds created_at): one settlement per generation is
-- held by its reservation's state (held → charged or released, under the row's lock), as it always was.
ALTER INDEX ledger_entries_generation_id_kind_key RENAME TO ledger_entries_generation_id_kind_idx;
