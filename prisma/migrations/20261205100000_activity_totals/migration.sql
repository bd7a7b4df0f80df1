-- Activity (decisions.md section 8): spend, requests and tokens by day x model x endpoint, read from totals kept as
-- generations end, never by scanning the history. Two tables, kept together by one trigger:
-- - activity_totals: one row per organization, day, model, provider, endpoint, API key and user ('' for none: a primary
--   key has no nulls); GET /v1/activity filtered by key or member sums these.
-- - activity_org_totals: the same without key and user; the organization's whole activity (an owner's read) sums these,
--   at most days x endpoints rows however many keys and members it has.
CREATE TABLE "activity_totals" (
    "organization_id" TEXT NOT NULL,
    -- The day of the generation's creation, days starting at 01:00 Moscow time (22:00 UTC), as limit periods do.
    "day" DATE NOT NULL,
    "model" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "api_key_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "usage" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "prompt_tokens" BIGINT NOT NULL DEFAULT 0,
    "completion_tokens" BIGINT NOT NULL DEFAULT 0,
    "reasoning_tokens" BIGINT NOT NULL DEFAULT 0,
    "cached_tokens" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "activity_totals_pkey" PRIMARY KEY ("organization_id", "day", "model", "provider", "endpoint", "api_key_id", "user_id")
) WITH (fillfactor = 70); -- room on each page, so that adding to a row is a HOT update that touches no index
CREATE INDEX "activity_totals_api_key_id_day_idx" ON "activity_totals" ("organization_id", "api_key_id", "day");
CREATE INDEX "activity_totals_user_id_day_idx" ON "activity_totals" ("organization_id", "user_id", "day");

CREATE TABLE "activity_org_totals" (
    "organization_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "model" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "usage" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "prompt_tokens" BIGINT NOT NULL DEFAULT 0,
    "completion_tokens" BIGINT NOT NULL DEFAULT 0,
    "reasoning_tokens" BIGINT NOT NULL DEFAULT 0,
    "cached_tokens" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "activity_org_totals_pkey" PRIMARY KEY ("organization_id", "day", "model", "provider", "endpoint")
) WITH (fillfactor = 70);

-- 22:00 UTC the day before is 00:00 of the activity day (Moscow has been UTC+3 all year since 2014).
CREATE FUNCTION sy_activity_day(p_at timestamptz) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ((p_at AT TIME ZONE 'UTC') + interval '2 hours')::date $$;

-- The first of three keys of a usage record that holds a number (our TokenUsage's name, then others'), whole; 0 if none.
-- One expression, so that PostgreSQL inlines it into the trigger's query.
CREATE FUNCTION sy_usage_count(p_usage jsonb, p_a text, p_b text, p_c text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT COALESCE(trunc(CASE WHEN jsonb_typeof(p_usage->p_a) = 'number' THEN (p_usage->>p_a)::numeric
                             WHEN jsonb_typeof(p_usage->p_b) = 'number' THEN (p_usage->>p_b)::numeric
                             WHEN jsonb_typeof(p_usage->p_c) = 'number' THEN (p_usage->>p_c)::numeric END)::bigint, 0)
$$;

-- Where a generation counts: the endpoint (and its provider) that answered; a failure's, the last one tried; '' if none.
CREATE FUNCTION sy_activity_endpoint(p_endpoint text, p_routing jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT COALESCE(p_endpoint, p_routing->'attempts'->-1->>'endpoint', '') $$;
CREATE FUNCTION sy_activity_provider(p_provider text, p_routing jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT COALESCE(p_provider, p_routing->'attempts'->-1->>'provider', '') $$;

-- Generations that have just ended, added to their totals. For an UPDATE (the ledger's close: pending or processing to
-- completed, failed or cancelled, in the transaction that charges them) per statement, from its transition tables: the
-- generations a statement ends together (a ledger batch) cost one upsert per totals row, and the rows are locked in
-- the primary key's order, so two settlements adding to the same rows never deadlock. Only the columns named are
-- read (no whole row: a generation's request and result are never detoasted here).
CREATE FUNCTION sy_activity_on_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_totals AS t (organization_id, day, model, provider, endpoint, api_key_id, user_id,
      usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
  SELECT n.organization_id, sy_activity_day(n.created_at), n.model, sy_activity_provider(n.provider, n.routing),
         sy_activity_endpoint(n.final_endpoint_slug, n.routing), COALESCE(n.api_key_id, ''), COALESCE(n.user_id, ''),
         SUM(n.client_cost), COUNT(*),
         SUM(sy_usage_count(n.usage, 'inputTokens', 'input_tokens', 'prompt_tokens')),
         SUM(sy_usage_count(n.usage, 'outputTokens', 'output_tokens', 'completion_tokens')),
         SUM(sy_usage_count(n.usage, 'reasoningTokens', 'reasoning_tokens', NULL)),
         SUM(sy_usage_count(n.usage, 'cachedTokens', 'cached_tokens', NULL))
    FROM ended_new n JOIN ended_old o ON o.id = n.id
   WHERE n.status IN ('completed', 'failed', 'cancelled') AND o.status NOT IN ('completed', 'failed', 'cancelled')
   GROUP BY 1, 2, 3, 4, 5, 6, 7
   ORDER BY 1, 2, 3, 4, 5, 6, 7
  ON CONFLICT ON CONSTRAINT activity_totals_pkey DO UPDATE SET
    usage = t.usage + EXCLUDED.usage,
    requests = t.requests + EXCLUDED.requests,
    prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
  -- Then the organization's rows (always after the key's and member's, so every settlement locks in one order).
  INSERT INTO activity_org_totals AS t (organization_id, day, model, provider, endpoint,
      usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
  SELECT n.organization_id, sy_activity_day(n.created_at), n.model, sy_activity_provider(n.provider, n.routing),
         sy_activity_endpoint(n.final_endpoint_slug, n.routing),
         SUM(n.client_cost), COUNT(*),
         SUM(sy_usage_count(n.usage, 'inputTokens', 'input_tokens', 'prompt_tokens')),
         SUM(sy_usage_count(n.usage, 'outputTokens', 'output_tokens', 'completion_tokens')),
         SUM(sy_usage_count(n.usage, 'reasoningTokens', 'reasoning_tokens', NULL)),
         SUM(sy_usage_count(n.usage, 'cachedTokens', 'cached_tokens', NULL))
    FROM ended_new n JOIN ended_old o ON o.id = n.id
   WHERE n.status IN ('completed', 'failed', 'cancelled') AND o.status NOT IN ('completed', 'failed', 'cancelled')
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT ON CONSTRAINT activity_org_totals_pkey DO UPDATE SET
    usage = t.usage + EXCLUDED.usage,
    requests = t.requests + EXCLUDED.requests,
    prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
  RETURN NULL;
END $$;

-- A generation recorded already ended (none is today: every record is inserted pending). Per row, only for those.
CREATE FUNCTION sy_activity_on_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_totals AS t (organization_id, day, model, provider, endpoint, api_key_id, user_id,
      usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
  VALUES (NEW.organization_id, sy_activity_day(NEW.created_at), NEW.model, sy_activity_provider(NEW.provider, NEW.routing),
          sy_activity_endpoint(NEW.final_endpoint_slug, NEW.routing), COALESCE(NEW.api_key_id, ''), COALESCE(NEW.user_id, ''),
          NEW.client_cost, 1,
          sy_usage_count(NEW.usage, 'inputTokens', 'input_tokens', 'prompt_tokens'),
          sy_usage_count(NEW.usage, 'outputTokens', 'output_tokens', 'completion_tokens'),
          sy_usage_count(NEW.usage, 'reasoningTokens', 'reasoning_tokens', NULL),
          sy_usage_count(NEW.usage, 'cachedTokens', 'cached_tokens', NULL))
  ON CONFLICT ON CONSTRAINT activity_totals_pkey DO UPDATE SET
    usage = t.usage + EXCLUDED.usage,
    requests = t.requests + EXCLUDED.requests,
    prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
  INSERT INTO activity_org_totals AS t (organization_id, day, model, provider, endpoint,
      usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
  SELECT a.organization_id, a.day, a.model, a.provider, a.endpoint, NEW.client_cost, 1,
         sy_usage_count(NEW.usage, 'inputTokens', 'input_tokens', 'prompt_tokens'),
         sy_usage_count(NEW.usage, 'outputTokens', 'output_tokens', 'completion_tokens'),
         sy_usage_count(NEW.usage, 'reasoningTokens', 'reasoning_tokens', NULL),
         sy_usage_count(NEW.usage, 'cachedTokens', 'cached_tokens', NULL)
    FROM (SELECT NEW.organization_id, sy_activity_day(NEW.created_at) AS day, NEW.model,
                 sy_activity_provider(NEW.provider, NEW.routing) AS provider, sy_activity_endpoint(NEW.final_endpoint_slug, NEW.routing) AS endpoint) a
  ON CONFLICT ON CONSTRAINT activity_org_totals_pkey DO UPDATE SET
    usage = t.usage + EXCLUDED.usage,
    requests = t.requests + EXCLUDED.requests,
    prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
  RETURN NULL;
END $$;

CREATE TRIGGER generations_activity_update AFTER UPDATE ON generations
  REFERENCING OLD TABLE AS ended_old NEW TABLE AS ended_new
  FOR EACH STATEMENT EXECUTE FUNCTION sy_activity_on_update();
CREATE TRIGGER generations_activity_insert AFTER INSERT ON generations
  FOR EACH ROW WHEN (NEW.status IN ('completed', 'failed', 'cancelled')) EXECUTE FUNCTION sy_activity_on_insert();

-- The generations that ended before this migration, over the longest window GET /v1/activity reads (90 days) (the
-- trigger's lock on `generations` holds their writers until this commits).
INSERT INTO activity_totals (organization_id, day, model, provider, endpoint, api_key_id, user_id,
    usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
SELECT g.organization_id, sy_activity_day(g.created_at), g.model, sy_activity_provider(g.provider, g.routing),
       sy_activity_endpoint(g.final_endpoint_slug, g.routing), COALESCE(g.api_key_id, ''), COALESCE(g.user_id, ''),
       SUM(g.client_cost), COUNT(*),
       SUM(sy_usage_count(g.usage, 'inputTokens', 'input_tokens', 'prompt_tokens')),
       SUM(sy_usage_count(g.usage, 'outputTokens', 'output_tokens', 'completion_tokens')),
       SUM(sy_usage_count(g.usage, 'reasoningTokens', 'reasoning_tokens', NULL)),
       SUM(sy_usage_count(g.usage, 'cachedTokens', 'cached_tokens', NULL))
  FROM generations g
 WHERE g.status IN ('completed', 'failed', 'cancelled') AND g.created_at >= now() - interval '92 days'
 GROUP BY 1, 2, 3, 4, 5, 6, 7;
INSERT INTO activity_org_totals (organization_id, day, model, provider, endpoint,
    usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
SELECT organization_id, day, model, provider, endpoint, SUM(usage), SUM(requests), SUM(prompt_tokens),
       SUM(completion_tokens), SUM(reasoning_tokens), SUM(cached_tokens)
  FROM activity_totals GROUP BY 1, 2, 3, 4, 5;
