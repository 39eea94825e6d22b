DROP TABLE latch_signals;
DROP TABLE latch_steps;
DROP INDEX latch_executions_schedule;
CREATE INDEX latch_executions_schedule ON latch_executions (tenant, schedule)
    WHERE schedule IS NOT NULL AND status IN ('scheduled', 'queued', 'running');
DROP INDEX latch_executions_wake;
-- Version 5 has no flows: a suspended execution is queued, and its handler
-- runs it again from the start (its journal is gone). It keeps its quota
-- unit, as it is in flight either way.
UPDATE latch_executions SET status = 'queued', run_at = now() WHERE status = 'suspended';
ALTER TABLE latch_executions
    DROP COLUMN has_steps,
    DROP COLUMN resume,
    DROP COLUMN suspend_step,
    DROP COLUMN waiting_for,
    DROP COLUMN wake_at;
ALTER TABLE latch_executions DROP CONSTRAINT latch_executions_status_check;
ALTER TABLE latch_executions ADD CONSTRAINT latch_executions_status_check CHECK (status IN
    ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled', 'skipped'));
