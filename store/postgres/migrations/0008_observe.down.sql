DROP TABLE latch_activity;
DROP TABLE latch_workers;
DROP TABLE latch_servers;
DROP INDEX latch_executions_inflight;
ALTER TABLE latch_executions
    DROP COLUMN last_dedup_hit_at,
    DROP COLUMN dedup_hits,
    DROP COLUMN trace_parent;
