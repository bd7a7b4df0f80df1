-- The activity totals count the generations a statement ends, once per statement (as an update of records has since
-- prisma/migrations/20261205100000_activity_totals): a group commit's records inserted ended (a drawn record written
-- with its close: prisma/migrations/20261211000000_drawn_records_ended_once; since round 37 a stream's too) were counted
-- one row at a time, three upserts each, on the same few totals rows; now one upsert a totals row a group. One body
-- for both triggers (`sy_activity_count`): what an insert ended, or an update moved from running to ended.
CREATE OR REPLACE FUNCTION sy_activity_count(p_ended generations[]) RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF cardinality(p_ended) = 0 THEN RETURN; END IF;
  -- Every settlement locks totals rows in one order: activity_totals, activity_member_totals, then the organization's.
  INSERT INTO activity_totals AS t (organization_id, day, model, provider, endpoint, api_key_id, user_id,
      usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
  SELECT n.organization_id, sy_activity_day(n.created_at), n.model, sy_activity_provider(n.provider, n.routing),
         sy_activity_endpoint(n.final_endpoint_slug, n.routing), COALESCE(n.api_key_id, ''), COALESCE(n.user_id, ''),
         SUM(n.client_cost), COUNT(*),
         SUM(sy_usage_count(n.usage, 'inputTokens', 'input_tokens', 'prompt_tokens')),
         SUM(sy_usage_count(n.usage, 'outputTokens', 'output_tokens', 'completion_tokens')),
         SUM(sy_usage_count(n.usage, 'reasoningTokens', 'reasoning_tokens', NULL)),
         SUM(sy_usage_count(n.usage, 'cachedTokens', 'cached_tokens', NULL))
    FROM unnest(p_ended) n
   GROUP BY 1, 2, 3, 4, 5, 6, 7
   ORDER BY 1, 2, 3, 4, 5, 6, 7
  ON CONFLICT ON CONSTRAINT activity_totals_pkey DO UPDATE SET
    usage = t.usage + EXCLUDED.usage,
    requests = t.requests + EXCLUDED.requests,
    prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
  -- Then the members' rows (generations with a user), after the key's and before the organization's.
  INSERT INTO activity_member_totals AS t (organization_id, day, model, provider, endpoint, user_id,
      usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
  SELECT n.organization_id, sy_activity_day(n.created_at), n.model, sy_activity_provider(n.provider, n.routing),
         sy_activity_endpoint(n.final_endpoint_slug, n.routing), n.user_id,
         SUM(n.client_cost), COUNT(*),
         SUM(sy_usage_count(n.usage, 'inputTokens', 'input_tokens', 'prompt_tokens')),
         SUM(sy_usage_count(n.usage, 'outputTokens', 'output_tokens', 'completion_tokens')),
         SUM(sy_usage_count(n.usage, 'reasoningTokens', 'reasoning_tokens', NULL)),
         SUM(sy_usage_count(n.usage, 'cachedTokens', 'cached_tokens', NULL))
    FROM unnest(p_ended) n
   WHERE n.user_id IS NOT NULL
   GROUP BY 1, 2, 3, 4, 5, 6
   ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT ON CONSTRAINT activity_member_totals_pkey DO UPDATE SET
    usage = t.usage + EXCLUDED.usage,
    requests = t.requests + EXCLUDED.requests,
    prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
  -- Then the organization's rows (always last, so every settlement locks in one order).
  INSERT INTO activity_org_totals AS t (organization_id, day, model, provider, endpoint,
      usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
  SELECT n.organization_id, sy_activity_day(n.created_at), n.model, sy_activity_provider(n.provider, n.routing),
         sy_activity_endpoint(n.final_endpoint_slug, n.routing),
         SUM(n.client_cost), COUNT(*),
         SUM(sy_usage_count(n.usage, 'inputTokens', 'input_tokens', 'prompt_tokens')),
         SUM(sy_usage_count(n.usage, 'outputTokens', 'output_tokens', 'completion_tokens')),
         SUM(sy_usage_count(n.usage, 'reasoningTokens', 'reasoning_tokens', NULL)),
         SUM(sy_usage_count(n.usage, 'cachedTokens', 'cached_tokens', NULL))
    FROM unnest(p_ended) n
   GROUP BY 1, 2, 3, 4, 5
   ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT ON CONSTRAINT activity_org_totals_pkey DO UPDATE SET
    usage = t.usage + EXCLUDED.usage,
    requests = t.requests + EXCLUDED.requests,
    prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
END $function$;

CREATE OR REPLACE FUNCTION sy_activity_on_update() RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM sy_activity_count(ARRAY(
    SELECT n::generations FROM ended_new n JOIN ended_old o ON o.id = n.id
     WHERE n.status IN ('completed', 'failed', 'cancelled') AND o.status NOT IN ('completed', 'failed', 'cancelled')));
  RETURN NULL;
END $function$;

CREATE OR REPLACE FUNCTION sy_activity_on_insert() RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM sy_activity_count(ARRAY(SELECT n::generations FROM ended_new n WHERE n.status IN ('completed', 'failed', 'cancelled')));
  RETURN NULL;
END $function$;

-- No settlement runs between the two: none is counted twice or missed.
LOCK TABLE generations IN SHARE ROW EXCLUSIVE MODE;
DROP TRIGGER generations_activity_insert ON generations;
CREATE TRIGGER generations_activity_insert AFTER INSERT ON generations
  REFERENCING NEW TABLE AS ended_new FOR EACH STATEMENT EXECUTE FUNCTION sy_activity_on_insert();
