-- latch schema version 7: the attempt history (store/attempt.go).
--
-- runs counts the runs an execution was claimed for: a claim adds one and
-- records that run as latch_runs row (execution_id, run); the operation
-- that ends the run (Complete, Fail, Release, Suspend, Rescue) finds it by
-- the same key, on the primary key, in its own statement. Only claims
-- change runs (each also changes the lease token), so the run under a
-- lease is always the execution's runs. Not indexed: the claim's update of
-- the execution stays HOT.
ALTER TABLE latch_executions ADD COLUMN runs integer NOT NULL DEFAULT 0;

-- One row per run; the claim that records run n also drops run n - 100
-- (store.MaxRunsKept), so an execution keeps its latest 100. No foreign
-- key to latch_executions (no key check on every claim): the rows go with
-- their execution in the statements that delete it (Delete, Prune,
-- DeleteTenant), found by execution_id on the primary key, as the journal.
-- A run is updated once, when it ends, and no indexed column changes then:
-- fillfactor leaves room on the page for that update to be HOT (ending
-- every run of a full table: about 80% HOT at 50, a third at 70, almost
-- none at the default 100; drain was faster at 50 than at 70).
CREATE TABLE latch_runs (
    execution_id  uuid NOT NULL,
    run           integer NOT NULL,
    attempt       integer NOT NULL,
    worker_id     text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    ended_at      timestamptz,
    outcome       text CHECK (outcome IN
                  ('succeeded', 'failed', 'cancelled', 'released', 'suspended', 'expired')),
    error         text,
    PRIMARY KEY (execution_id, run)
) WITH (fillfactor = 50);
