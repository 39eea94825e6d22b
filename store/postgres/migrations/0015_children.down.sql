-- Back to schema version 14: no children.
DROP FUNCTION latch_journal_bytes(uuid);
DROP FUNCTION latch_spawn_children(uuid, text);
DROP FUNCTION latch_child_ended(uuid, text);
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
