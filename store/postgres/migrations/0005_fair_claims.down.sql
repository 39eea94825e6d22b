DROP FUNCTION latch_claim_candidates(timestamptz, bigint, text, text[], text[], boolean);
CREATE FUNCTION latch_claim_candidates(now timestamptz, n bigint, tenant text, queues text[], kinds text[])
RETURNS TABLE (id uuid, priority integer, run_at timestamptz, limited boolean)
LANGUAGE plpgsql VOLATILE
SET enable_bitmapscan = off
SET jit = off
AS $$
BEGIN
    RETURN QUERY
    SELECT e.id, e.priority, e.run_at,
        e.concurrency_key IS NOT NULL OR (e.rate_key IS NOT NULL AND EXISTS (
            SELECT 1 FROM latch_rate_limits l WHERE l.tenant = e.tenant AND l.rate_key = e.rate_key))
    FROM latch_executions e
    WHERE e.status IN ('queued', 'scheduled')
      AND (e.status = 'queued' OR e.run_at <= latch_claim_candidates.now)
      AND (e.concurrency_key IS NULL OR e.concurrency_limit > (SELECT count(*) FROM latch_executions k
           WHERE k.status = 'running' AND k.tenant = e.tenant AND k.concurrency_key = e.concurrency_key))
      AND (latch_claim_candidates.tenant = '' OR e.tenant = latch_claim_candidates.tenant)
      AND (coalesce(cardinality(queues), 0) = 0 OR e.queue = ANY(queues))
      AND (coalesce(cardinality(kinds), 0) = 0 OR e.kind = ANY(kinds))
    ORDER BY e.priority DESC, e.run_at, e.id
    LIMIT n
    FOR UPDATE OF e SKIP LOCKED;
END
$$;
CREATE INDEX latch_executions_ready ON latch_executions (priority DESC, run_at, id)
    WHERE status IN ('queued', 'scheduled');
DROP INDEX latch_executions_scheduled;
DROP INDEX latch_executions_queued;
DROP SEQUENCE latch_turns;
ALTER TABLE latch_tenants RESET (fillfactor);
ALTER TABLE latch_tenants DROP COLUMN turn;
