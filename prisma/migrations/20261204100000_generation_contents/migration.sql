-- Customer content out of the hot row (spec decisions.md section 9; docs/architecture.md "Partitions"): a
-- generation's request body, and its answer unless it is an image or media generation (whose answer is the list of
-- its stored files, kept with the record), live in generation_contents, partitioned by day of the generation's
-- created_at. The maintenance job drops each day once it is CONTENT_RETENTION_DAYS old (default 30): the content is
-- erased whole, without row deletes. The record (usage, cost, timings) stays in generations.
--
-- Every write of generations goes through the trigger below, so the writers (the ledger's SQL functions, the
-- stored responses' erasure) are unchanged: a request or answer written to the row is moved into the content table.
-- Readers get it back with withContent (shared/db/generation-reads.ts).

CREATE TABLE generation_contents (
  generation_id text NOT NULL,
  created_at timestamptz(3) NOT NULL,
  request jsonb,
  result jsonb,
  CONSTRAINT generation_contents_pkey PRIMARY KEY (generation_id, created_at)
) PARTITION BY RANGE (created_at);
CREATE TABLE generation_contents_default PARTITION OF generation_contents DEFAULT;
SELECT sy_partition_ensure('generation_contents', now() + make_interval(days => i), 'day') FROM generate_series(-31, 7) i;

-- Upgrade: the last 31 days' content moves; older content is past the default retention and is erased.
INSERT INTO generation_contents (generation_id, created_at, request, result)
  SELECT id, created_at, request, CASE WHEN api_type IN ('images', 'media') THEN NULL ELSE result END
    FROM generations WHERE created_at >= now() - interval '31 days';
ALTER TABLE generations ALTER COLUMN request DROP NOT NULL;
UPDATE generations SET request = NULL, result = CASE WHEN api_type IN ('images', 'media') THEN result END
 WHERE request IS NOT NULL OR (result IS NOT NULL AND api_type NOT IN ('images', 'media'));

CREATE FUNCTION sy_generation_content() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE keep_result boolean := NEW.api_type IN ('images', 'media');
BEGIN
  IF NEW.request IS NULL AND (NEW.result IS NULL OR keep_result) THEN RETURN NEW; END IF;
  INSERT INTO generation_contents AS c (generation_id, created_at, request, result)
  VALUES (NEW.id, NEW.created_at, NEW.request, CASE WHEN keep_result THEN NULL ELSE NEW.result END)
  ON CONFLICT (generation_id, created_at) DO UPDATE
    SET request = COALESCE(EXCLUDED.request, c.request), result = COALESCE(EXCLUDED.result, c.result);
  NEW.request := NULL;
  IF NOT keep_result THEN NEW.result := NULL; END IF;
  RETURN NEW;
END
$$;

-- BEFORE triggers run in name order: the id's uniqueness first (a skipped row writes no content), then the content.
ALTER TRIGGER generations_id_once ON generations RENAME TO generations_1_id_once;
CREATE TRIGGER generations_2_content BEFORE INSERT OR UPDATE ON generations FOR EACH ROW EXECUTE FUNCTION sy_generation_content();
