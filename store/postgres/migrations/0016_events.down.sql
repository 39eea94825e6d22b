-- Back to schema version 15: no events. Suspended waits for an event go
-- back to the queue, as a flow's resume, their wait forgotten (the flow
-- suspends again and waits anew, or times out, on the newer latch); the
-- events' bytes leave their tenants' stored bytes.
UPDATE latch_executions SET status = 'queued', run_at = now(), resume = true,
    wake_at = NULL, waiting_for = NULL, suspend_step = NULL
WHERE status = 'suspended' AND wait_since IS NOT NULL;
UPDATE latch_storage s SET stored_bytes = s.stored_bytes - x.n
FROM (SELECT tenant, sum(size)::bigint AS n FROM latch_events GROUP BY tenant) x
WHERE s.tenant = x.tenant;
DROP FUNCTION latch_delete_events(text);
DROP FUNCTION latch_prune_events(timestamptz, integer);
DROP FUNCTION latch_event_match(text, text, text, timestamptz, uuid, timestamptz);
CREATE OR REPLACE FUNCTION latch_delete_history(ids uuid[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    done bigint;
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN 0;
    END IF;
    DELETE FROM latch_steps WHERE execution_id = ANY(ids);
    DELETE FROM latch_signals WHERE execution_id = ANY(ids);
    DELETE FROM latch_runs WHERE execution_id = ANY(ids);
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN done;
END
$$;
DROP INDEX latch_executions_event_waits;
ALTER TABLE latch_executions
    DROP COLUMN wait_since,
    DROP COLUMN wait_key;
DROP TABLE latch_subscriptions;
DROP TABLE latch_event_consumed;
DROP TABLE latch_events;
ALTER TABLE latch_tenants DROP COLUMN event_retention;
