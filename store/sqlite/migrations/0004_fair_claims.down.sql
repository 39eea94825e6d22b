CREATE INDEX executions_ready ON executions (priority DESC, run_at, id)
    WHERE status IN ('queued', 'scheduled');
DROP INDEX executions_ready_tenant;
DROP INDEX tenants_ready;
DROP INDEX tenants_turn;
ALTER TABLE tenants DROP COLUMN turn;
