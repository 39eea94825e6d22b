-- latch schema version 11: children (store/children.go).
--
-- A child names its parent (parent_id), the spawn step (parent_step), its
-- place among its parent's children in spawn order (parent_seq, from 1 per
-- parent), what its parent's end does to it (on_parent_end: 'cancel' or
-- 'abandon') and its depth (0 for an execution nobody spawned). All but
-- depth are NULL for an execution nobody spawned; parent_id, parent_step
-- and parent_seq become NULL when an abandoned child outlives its deleted
-- parent. children counts the children an execution spawned over its life
-- (the bound store.MaxChildren, and the next parent_seq). wait_count is a
-- fan-in wait's count (0 = all), NULL in every other status.
--
-- spawns is one row per spawn step: its children (total) and how many of
-- them have ended (terminal or deleted), changed in the transaction that
-- ends one, so that a child's end decides its parent's fan-in wait from one
-- row, never by reading its siblings.
ALTER TABLE executions ADD COLUMN parent_id TEXT;
ALTER TABLE executions ADD COLUMN parent_step TEXT;
ALTER TABLE executions ADD COLUMN parent_seq INTEGER;
ALTER TABLE executions ADD COLUMN on_parent_end TEXT;
ALTER TABLE executions ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN children INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN wait_count INTEGER;
-- An execution's children in spawn order: List by ParentID, and a
-- parent's delete.
CREATE INDEX executions_children ON executions (parent_id, parent_seq)
    WHERE parent_id IS NOT NULL;
-- An execution's children in flight: a parent's end cancels them.
CREATE INDEX executions_live_children ON executions (parent_id)
    WHERE parent_id IS NOT NULL AND status IN ('scheduled', 'queued', 'running', 'suspended');

-- Prune's candidates: finished executions that are not a child (a child
-- goes with its parent only), so that children of parents still kept are
-- never read again and again.
CREATE INDEX executions_finished_roots ON executions (finished_at)
    WHERE finished_at IS NOT NULL AND parent_id IS NULL;

CREATE TABLE spawns (
    parent_id  TEXT NOT NULL,
    step       TEXT NOT NULL,
    total      INTEGER NOT NULL,
    ended      INTEGER NOT NULL,
    PRIMARY KEY (parent_id, step)
) WITHOUT ROWID;
