-- Back to schema version 13: no children.
DROP INDEX latch_executions_finished;
CREATE INDEX latch_executions_finished ON latch_executions (finished_at)
    WHERE finished_at IS NOT NULL;
DROP INDEX latch_executions_live_children;
DROP INDEX latch_executions_children;
ALTER TABLE latch_steps
    DROP COLUMN ended,
    DROP COLUMN spawned;
ALTER TABLE latch_executions
    DROP COLUMN wait_count,
    DROP COLUMN depth,
    DROP COLUMN children,
    DROP COLUMN child_ord,
    DROP COLUMN on_parent_end,
    DROP COLUMN parent_step,
    DROP COLUMN parent_id;
