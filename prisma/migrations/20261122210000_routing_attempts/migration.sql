-- The routing decision recorded on a generation grows as the job runs: the API records the candidates and why
-- each dropped endpoint was dropped; the worker adds the attempts (each failed provider and with what) and the
-- endpoint that answered. A finish item's `routing` is therefore merged into the stored object, not replacing it.
CREATE OR REPLACE FUNCTION sy_finish_generations(p_items jsonb, p_now timestamptz)
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
