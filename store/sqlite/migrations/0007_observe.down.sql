DROP INDEX activity_minute;
DROP TABLE activity;
DROP INDEX workers_tenant;
DROP INDEX workers_seen;
DROP TABLE workers;
DROP INDEX servers_seen;
DROP TABLE servers;
DROP INDEX executions_suspended;
DROP INDEX executions_leases;
CREATE INDEX executions_leases ON executions (lease_expires_at)
    WHERE status = 'running';
DROP INDEX executions_ready_tenant;
CREATE INDEX executions_ready_tenant ON executions (tenant, priority DESC, run_at, id)
    WHERE status IN ('queued', 'scheduled');
ALTER TABLE executions DROP COLUMN last_dedup_hit_at;
ALTER TABLE executions DROP COLUMN dedup_hits;
ALTER TABLE executions DROP COLUMN trace_parent;
