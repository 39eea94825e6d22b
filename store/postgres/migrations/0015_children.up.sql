-- latch schema version 14: children (store/children.go, doc.go
-- "Children"): executions a running flow spawns, fan-in waits on them, and
-- what a parent's end does to them.
--
-- A child names its parent and the spawn step (parent_id, parent_step:
-- NULL for an execution nobody spawned, and for an abandoned child whose
-- parent was deleted), what its parent's end does to it (on_parent_end,
-- NULL when nobody spawned it) and its place among its parent's children
-- (child_ord, from 1, in spawn order). A parent counts the children it
-- spawned over its life (children; the bound of store.MaxChildren, and
-- what tells the fenced ends that they must go the family's way). depth is
-- 0 for an execution nobody spawned, its parent's plus one for a child.
-- wait_count is set while an execution is suspended in a fan-in wait: the
-- number of children that ends it (0 = all); it also tells a fan-in wait
-- from a wait for a signal that happens to have the same name.
--
-- The defaults are constants: adding the columns rewrites nothing.
ALTER TABLE latch_executions
    ADD COLUMN parent_id uuid,
    ADD COLUMN parent_step text,
    ADD COLUMN on_parent_end text CHECK (on_parent_end IN ('cancel', 'abandon')),
    ADD COLUMN child_ord integer,
    ADD COLUMN children integer NOT NULL DEFAULT 0,
    ADD COLUMN depth integer NOT NULL DEFAULT 0,
    ADD COLUMN wait_count integer;

-- A spawn's counters, on the row of its step in the journal: how many
-- children it spawned and how many of them have ended (terminal, or
-- deleted while in flight). A child's end adds one, under its parent's row
-- lock, so deciding a fan-in wait costs one read of this row, never a scan
-- of the siblings. NULL on the steps that are not spawns.
ALTER TABLE latch_steps
    ADD COLUMN spawned integer,
    ADD COLUMN ended integer;

-- A parent's children in spawn order: List by parent, and the walk of a
-- family that Delete and Prune take together.
CREATE INDEX latch_executions_children ON latch_executions (parent_id, child_ord)
    WHERE parent_id IS NOT NULL;

-- A parent's children in flight: what its end cancels, read without the
-- ones that ended.
CREATE INDEX latch_executions_live_children ON latch_executions (parent_id)
    WHERE parent_id IS NOT NULL AND status IN ('scheduled', 'queued', 'running', 'suspended');

-- Prune takes a family together, from the execution nobody spawned (or
-- whose parent is gone): the children of a parent are not candidates on
-- their own.
DROP INDEX latch_executions_finished;
CREATE INDEX latch_executions_finished ON latch_executions (finished_at)
    WHERE finished_at IS NOT NULL AND parent_id IS NULL;
