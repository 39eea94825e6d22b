-- latch schema version 5: durable flows (docs/flows.md). Times are unix
-- nanoseconds (UTC), like 0001.
--
-- A suspended execution waits until wake_at (a sleep's end or a wait's
-- timeout; NULL for a wait without one) or for the signal waiting_for;
-- suspend_step names the step its outcome is recorded under. All three are
-- NULL in every other status. resume is set while an execution queued again
-- by its flow's own progress (a due sleep, a delivered signal, a timeout)
-- waits for its claim and while that claim's run lasts: such a claim does
-- not count a start. steps counts the journal's entries, so that a claim
-- reads the journal of the executions that have one only.
ALTER TABLE executions ADD COLUMN wake_at INTEGER;
ALTER TABLE executions ADD COLUMN waiting_for TEXT;
ALTER TABLE executions ADD COLUMN suspend_step TEXT;
ALTER TABLE executions ADD COLUMN resume INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN steps INTEGER NOT NULL DEFAULT 0;
-- Due suspensions, for Wake.
CREATE INDEX executions_wake ON executions (wake_at)
    WHERE status = 'suspended' AND wake_at IS NOT NULL;

-- The journal: an execution's recorded steps, in record order (seq, from 1
-- per execution). A name is recorded once per execution (I10).
CREATE TABLE flow_steps (
    execution_id  TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    name          TEXT NOT NULL,
    result        TEXT NOT NULL,
    started_at    INTEGER,
    recorded_at   INTEGER NOT NULL,
    attempt       INTEGER NOT NULL,
    PRIMARY KEY (execution_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX flow_steps_name ON flow_steps (execution_id, name);

-- Signals, in arrival order per execution (seq, from 1 per execution). A
-- buffered signal waits, unconsumed, for a wait of its name (I11). A signal
-- sent with an idempotency key keeps its row, consumed or not, with the
-- first answer (delivered), until the execution is deleted; one without a
-- key that a wait consumed is of no further use and is not kept.
CREATE TABLE flow_signals (
    execution_id     TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    name             TEXT NOT NULL,
    data             TEXT NOT NULL,
    consumed         INTEGER NOT NULL DEFAULT 0,
    idempotency_key  TEXT,
    delivered        INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    PRIMARY KEY (execution_id, seq)
) WITHOUT ROWID;
CREATE INDEX flow_signals_pending ON flow_signals (execution_id, name, seq) WHERE consumed = 0;
CREATE UNIQUE INDEX flow_signals_key ON flow_signals (execution_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
