-- A member's activity (decisions.md section 8: GET /v1/activity with user_id, and a member's own) from totals of its own:
-- summed from activity_totals it read every row of the member's keys (about 7,000 at 100 keys over 30 days, 21-25 ms
-- p99 in bench:activity); activity_member_totals holds one row per organization, day, model, provider, endpoint and
-- user, so the read adds up at most days x endpoints rows however many keys the member has. Only generations with a
-- user: a key's (the key's owner), a personal-account token's or a session's. Kept by the same trigger, in the same
-- transaction as the charge.
CREATE TABLE "activity_member_totals" (
    "organization_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "model" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "usage" DECIMAL(30,10) NOT NULL DEFAULT 0,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "prompt_tokens" BIGINT NOT NULL DEFAULT 0,
    "completion_tokens" BIGINT NOT NULL DEFAULT 0,
    "reasoning_tokens" BIGINT NOT NULL DEFAULT 0,
    "cached_tokens" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "activity_member_totals_pkey" PRIMARY KEY ("organization_id", "day", "model", "provider", "endpoint", "user_id")
) WITH (fillfactor = 70); -- as activity_totals: adding to a row is a HOT update
-- The member's read: its days, in one range of this index.
CREATE INDEX "activity_member_totals_user_id_day_idx" ON "activity_member_totals" ("organization_id", "user_id", "day");

-- Settlements that end generations wait here until the table is filled and the trigger adds to it (none is counted
-- twice or missed: one that committed before is in activity_totals, one after runs the new trigger).
LOCK TABLE generations IN SHARE ROW EXCLUSIVE MODE;

-- As before (prisma/migrations/20261205100000_activity_totals), with the member's rows between the key's and the
-- organization's. Every settlement locks totals rows in one order — activity_totals, activity_member_totals, then
-- activity_org_totals, each in its primary key's order — so two settlements adding to the same rows never deadlock.
CREATE OR REPLACE FUNCTION sy_activity_on_update() RETURNS trigger
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
    FROM ended_new n JOIN ended_old o ON o.id = n.id
   WHERE n.status IN ('completed', 'failed', 'cancelled') AND o.status NOT IN ('completed', 'failed', 'cancelled')
     AND n.user_id IS NOT NULL
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

-- A generation recorded already ended (none is today: every record is inserted pending). Per row, only for those;
-- the three tables in the same order.
CREATE OR REPLACE FUNCTION sy_activity_on_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_day date := sy_activity_day(NEW.created_at);
  v_provider text := sy_activity_provider(NEW.provider, NEW.routing);
  v_endpoint text := sy_activity_endpoint(NEW.final_endpoint_slug, NEW.routing);
  v_prompt bigint := sy_usage_count(NEW.usage, 'inputTokens', 'input_tokens', 'prompt_tokens');
  v_completion bigint := sy_usage_count(NEW.usage, 'outputTokens', 'output_tokens', 'completion_tokens');
  v_reasoning bigint := sy_usage_count(NEW.usage, 'reasoningTokens', 'reasoning_tokens', NULL);
  v_cached bigint := sy_usage_count(NEW.usage, 'cachedTokens', 'cached_tokens', NULL);
BEGIN
  INSERT INTO activity_totals AS t (organization_id, day, model, provider, endpoint, api_key_id, user_id,
      usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
  VALUES (NEW.organization_id, v_day, NEW.model, v_provider, v_endpoint, COALESCE(NEW.api_key_id, ''), COALESCE(NEW.user_id, ''),
          NEW.client_cost, 1, v_prompt, v_completion, v_reasoning, v_cached)
  ON CONFLICT ON CONSTRAINT activity_totals_pkey DO UPDATE SET
    usage = t.usage + EXCLUDED.usage,
    requests = t.requests + EXCLUDED.requests,
    prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
  IF NEW.user_id IS NOT NULL THEN
    INSERT INTO activity_member_totals AS t (organization_id, day, model, provider, endpoint, user_id,
        usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
    VALUES (NEW.organization_id, v_day, NEW.model, v_provider, v_endpoint, NEW.user_id,
            NEW.client_cost, 1, v_prompt, v_completion, v_reasoning, v_cached)
    ON CONFLICT ON CONSTRAINT activity_member_totals_pkey DO UPDATE SET
      usage = t.usage + EXCLUDED.usage,
      requests = t.requests + EXCLUDED.requests,
      prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
      completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
      reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
      cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
  END IF;
  INSERT INTO activity_org_totals AS t (organization_id, day, model, provider, endpoint,
      usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
  VALUES (NEW.organization_id, v_day, NEW.model, v_provider, v_endpoint,
          NEW.client_cost, 1, v_prompt, v_completion, v_reasoning, v_cached)
  ON CONFLICT ON CONSTRAINT activity_org_totals_pkey DO UPDATE SET
    usage = t.usage + EXCLUDED.usage,
    requests = t.requests + EXCLUDED.requests,
    prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
    reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens,
    cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens;
  RETURN NULL;
END $$;

-- What the generations that ended before this migration left in activity_totals (the same 92 days), by member.
INSERT INTO activity_member_totals (organization_id, day, model, provider, endpoint, user_id,
    usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
SELECT organization_id, day, model, provider, endpoint, user_id, SUM(usage), SUM(requests), SUM(prompt_tokens),
       SUM(completion_tokens), SUM(reasoning_tokens), SUM(cached_tokens)
  FROM activity_totals WHERE user_id <> '' GROUP BY 1, 2, 3, 4, 5, 6;
