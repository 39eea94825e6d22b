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

-- A child's end and a fan-in wait read a spawn's step row and the parent's
-- journal by key. As with the runs (schema 10), statements plan once per
-- connection and keep the plan: one made while latch_steps looked empty
-- would read the table whole on every child's end. These functions leave
-- no sequential scan to choose.

-- latch_child_ended counts one more ended child of spawn step of parent,
-- answering the spawn's counters (no row: no such spawn).
CREATE FUNCTION latch_child_ended(parent uuid, step text)
RETURNS TABLE (n_ended integer, n_spawned integer)
LANGUAGE sql VOLATILE
SET enable_seqscan = off
SET jit = off
AS $$
    UPDATE latch_steps s SET ended = s.ended + 1
    WHERE s.execution_id = parent AND s.name = step
    RETURNING s.ended, s.spawned
$$;

-- latch_spawn_children answers the children a spawn step of parent
-- recorded, in spawn order.
CREATE FUNCTION latch_spawn_children(parent uuid, step text)
RETURNS TABLE (child_id text, ord bigint)
LANGUAGE sql STABLE
SET enable_seqscan = off
SET jit = off
AS $$
    SELECT c.id, c.n FROM latch_steps s
    CROSS JOIN LATERAL jsonb_array_elements_text(s.result::jsonb -> 'children') WITH ORDINALITY AS c(id, n)
    WHERE s.execution_id = parent AND s.name = step
$$;

-- latch_journal_bytes answers the bytes of parent's journal (names and
-- results).
CREATE FUNCTION latch_journal_bytes(parent uuid)
RETURNS bigint
LANGUAGE sql STABLE
SET enable_seqscan = off
SET jit = off
AS $$
    SELECT coalesce(sum(octet_length(s.name) + octet_length(s.result)), 0)::bigint
    FROM latch_steps s WHERE s.execution_id = parent
$$;
