-- latch schema version 3: the claim's candidates, planned for the queue.
--
-- latch_claim_candidates locks (FOR UPDATE SKIP LOCKED) and returns up to n
-- ready executions in claim order, those whose concurrency key is at its
-- limit left out; limited says the execution has a limit the claim must
-- decide under its lock (a concurrency key, or a rate key its tenant has a
-- limit for). tenant '' and NULL or empty queues or kinds filter nothing.
-- The ready conditions and the room test are those of claim.go (sqlReady,
-- sqlRoom).
--
-- It is a function only for its planner settings. The cheap plan walks
-- latch_executions_ready in claim order and stops after n rows; but the
-- planner multiplies the selectivities of the conditions (status, room,
-- kinds), which it cannot know without fresh statistics (a new table, a
-- burst after the table was analyzed while the queue was empty), and when
-- it expects only a few ready rows it picks a bitmap scan of every ready
-- execution and a sort instead: tens of milliseconds for each claim with
-- tens of thousands queued. Without bitmap scans the ordered index walk is
-- the cheapest plan whatever the statistics say, and the setting holds for
-- every plan of the query, including those made again after an ANALYZE.
-- JIT is off as well: statistics that promise a large result (many ready
-- rows, or many dead ones) raise the plan's estimated cost past
-- jit_above_cost, and compiling its expressions then costs each claim tens
-- of milliseconds to fetch at most n rows.
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
