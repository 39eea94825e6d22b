-- latch schema version 6: the attempt history (store/attempt.go). Times are
-- unix nanoseconds (UTC), like 0001.
--
-- Each lease a claim gives is one run, numbered from 1 per execution (seq):
-- executions.runs counts them. While it lasts, the run is the execution's
-- row (its attempt, worker_id and started_at, set by the claim); the
-- operation that ends it records it, ended, in execution_runs. A lease
-- claimed before this version is recorded as run 0. Only the latest runs
-- are kept: the claim of a run past store.MaxRunsKept deletes the oldest.
ALTER TABLE executions ADD COLUMN runs INTEGER NOT NULL DEFAULT 0;

CREATE TABLE execution_runs (
    execution_id  TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    attempt       INTEGER NOT NULL,
    worker_id     TEXT NOT NULL,
    claimed_at    INTEGER NOT NULL,
    ended_at      INTEGER NOT NULL,
    outcome       TEXT NOT NULL,
    error         TEXT,
    PRIMARY KEY (execution_id, seq)
) WITHOUT ROWID;
