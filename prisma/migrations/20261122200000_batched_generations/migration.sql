-- Group commit for the hot path. Every generation touches its organization's row twice (reserve, settle), and
-- a row lock is held until the commit's WAL flush: one transaction per call caps an organization at about one
-- thousand calls a second and collapses under contention. These functions take a whole batch (collected by
-- each process while its previous batch commits) and run it in ONE transaction: one lock acquisition and one
-- flush for many generations, with exactly the per-generation rules of sy_reserve and sy_settle.
-- Items are processed in organization order, so concurrent batches lock organizations in the same order.

-- p_items: [{id, organization_id, api_key_id, user_id, bound, minimum, model, unified_model_id,
--            model_display_name, request_type, api_type, response_mode, request, warnings, routing,
--            call_back_url, source_generation_id, previous_response_id, trace_id}]
CREATE FUNCTION sy_create_generations(p_items jsonb, p_now timestamptz)
RETURNS TABLE (id text, granted numeric, reason text)
LANGUAGE plpgsql AS $$
DECLARE it jsonb; r record;
BEGIN
  FOR it IN SELECT value FROM jsonb_array_elements(p_items) ORDER BY value->>'organization_id', value->>'id'
  LOOP
    SELECT * INTO r FROM sy_reserve(it->>'id', it->>'organization_id', it->>'api_key_id', it->>'user_id',
      (it->>'bound')::numeric, (it->>'minimum')::numeric, p_now);
    IF r.reason IS NULL THEN
      INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id, model_display_name,
        request_type, api_type, response_mode, status, reserved_amount, request, warnings, routing, call_back_url,
        source_generation_id, previous_response_id, trace_id, created_at)
      VALUES (it->>'id', it->>'organization_id', it->>'api_key_id', it->>'user_id', it->>'model', it->>'unified_model_id',
        it->>'model_display_name', it->>'request_type', it->>'api_type', it->>'response_mode', 'pending', r.granted,
        COALESCE(it->'request', '{}'::jsonb), NULLIF(it->'warnings', 'null'::jsonb), NULLIF(it->'routing', 'null'::jsonb),
        it->>'call_back_url', it->>'source_generation_id', it->>'previous_response_id', it->>'trace_id', p_now)
      ON CONFLICT ON CONSTRAINT generations_pkey DO NOTHING;
    END IF;
    id := it->>'id'; granted := r.granted; reason := r.reason;
    RETURN NEXT;
  END LOOP;
END
$$;

-- p_items: [{id, status, cost (absent: release), result, usage, error, warnings, routing, model, provider,
--            final_endpoint_slug, finish_reason, attempts_count, latency_ms, queue_time_ms, generation_time_ms,
--            upstream_id}]
-- `applied` is false when the generation had already ended: its first ending stands. The routing decision
-- grows as the job runs (the API records candidates and drops, the worker adds attempts and the endpoint that
-- answered), so an item's `routing` is merged into the stored object rather than replacing it.
CREATE FUNCTION sy_finish_generations(p_items jsonb, p_now timestamptz)
RETURNS TABLE (id text, outcome text, charged numeric, applied boolean)
LANGUAGE plpgsql AS $$
DECLARE it jsonb; s record; n int;
BEGIN
  FOR it IN
    -- A correlated lookup (one primary-key probe per item): a join here is planned as a scan of reservations.
    SELECT i.value FROM jsonb_array_elements(p_items) i
    ORDER BY (SELECT res.organization_id FROM reservations res WHERE res.generation_id = i.value->>'id'), i.value->>'id'
  LOOP
    SELECT * INTO s FROM sy_settle(it->>'id', COALESCE((it->>'cost')::numeric, 0), NOT (it ? 'cost'), p_now);
    n := 0;
    IF s.outcome IN ('charged', 'released', 'not_found') THEN
      UPDATE generations g SET
        status = (it->>'status')::"GenerationStatus",
        client_cost = s.charged,
        result = COALESCE(NULLIF(it->'result', 'null'::jsonb), g.result),
        usage = COALESCE(NULLIF(it->'usage', 'null'::jsonb), g.usage),
        error = COALESCE(NULLIF(it->'error', 'null'::jsonb), g.error),
        warnings = COALESCE(NULLIF(it->'warnings', 'null'::jsonb), g.warnings),
        routing = CASE WHEN jsonb_typeof(it->'routing') = 'object'
                       THEN COALESCE(g.routing, '{}'::jsonb) || (it->'routing') ELSE g.routing END,
        model = COALESCE(it->>'model', g.model),
        provider = COALESCE(it->>'provider', g.provider),
        final_endpoint_slug = COALESCE(it->>'final_endpoint_slug', g.final_endpoint_slug),
        finish_reason = COALESCE(it->>'finish_reason', g.finish_reason),
        attempts_count = COALESCE((it->>'attempts_count')::int, g.attempts_count),
        latency_ms = COALESCE((it->>'latency_ms')::int, g.latency_ms),
        queue_time_ms = COALESCE((it->>'queue_time_ms')::int, g.queue_time_ms),
        generation_time_ms = COALESCE((it->>'generation_time_ms')::int, g.generation_time_ms),
        upstream_id = COALESCE(it->>'upstream_id', g.upstream_id),
        is_cancelled = (it->>'status') = 'cancelled',
        completed_at = p_now
      WHERE g.id = it->>'id' AND g.status IN ('pending', 'processing');
      GET DIAGNOSTICS n = ROW_COUNT;
    END IF;
    id := it->>'id'; outcome := s.outcome; charged := s.charged; applied := n > 0;
    RETURN NEXT;
  END LOOP;
END
$$;
