-- latch schema version 6: flows (docs/flows.md): steps, sleeps and signals.
--
-- A new status, suspended: a flow waiting for a time (wake_at) or a signal
-- (waiting_for), or both (a wait with a timeout); suspend_step is the step
-- its outcome is recorded under. A suspended execution holds its quota unit
-- but no lease and no concurrency-key slot (those count running executions
-- only); it is not claimable, promoted or rescued (those read queued,
-- scheduled and running executions only), and it is in flight for the
-- overlap check of schedules and for DeleteTenant.
ALTER TABLE latch_executions DROP CONSTRAINT latch_executions_status_check;
ALTER TABLE latch_executions ADD CONSTRAINT latch_executions_status_check CHECK (status IN
    ('scheduled', 'queued', 'running', 'suspended', 'succeeded', 'failed', 'cancelled', 'skipped'));

-- resume: the execution was queued again by its flow's own progress (a
-- suspension that ended, or one that did not need to wait): its next claim
-- does not count a start. It stays set while that run holds its lease, so
-- that a Release of an unstarted lease can give the run back as it was,
-- and is cleared when the run ends. has_steps: the journal is not empty,
-- so a claim reads it only for the executions that have one. Neither is
-- indexed: their updates stay HOT.
ALTER TABLE latch_executions
    ADD COLUMN wake_at timestamptz,
    ADD COLUMN waiting_for text,
    ADD COLUMN suspend_step text,
    ADD COLUMN resume boolean NOT NULL DEFAULT false,
    ADD COLUMN has_steps boolean NOT NULL DEFAULT false;

-- Suspensions that end by themselves, for Wake.
CREATE INDEX latch_executions_wake ON latch_executions (wake_at)
    WHERE status = 'suspended' AND wake_at IS NOT NULL;

-- A suspended execution of a schedule is not terminal: the overlap-skip
-- check sees it.
DROP INDEX latch_executions_schedule;
CREATE INDEX latch_executions_schedule ON latch_executions (tenant, schedule)
    WHERE schedule IS NOT NULL AND status IN ('scheduled', 'queued', 'running', 'suspended');

-- The journal: one row per recorded step; the primary key makes the first
-- record of a name the only one (I10). seq is the record order. No foreign
-- key to latch_executions (no key check on every record): the rows go with
-- their execution in the statements that delete it (Delete, Prune,
-- DeleteTenant), which find them by execution_id on the primary key.
CREATE TABLE latch_steps (
    execution_id  uuid NOT NULL,
    name          text NOT NULL,
    result        text NOT NULL,
    started_at    timestamptz,
    recorded_at   timestamptz NOT NULL,
    attempt       integer NOT NULL,
    seq           bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (execution_id, name)
);

-- Signals: buffered ones (not consumed) wait for a wait of their name and
-- are consumed oldest first (seq, taken under the execution's row lock, is
-- the arrival order); a signal sent with an idempotency key keeps its row,
-- with its first answer (delivered), until its execution is deleted, so a
-- repeat answers the same. A signal without a key that ended a wait at
-- once leaves no row. Deleted with the execution, as the journal.
CREATE TABLE latch_signals (
    execution_id     uuid NOT NULL,
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    name             text NOT NULL,
    data             text NOT NULL,
    consumed         boolean NOT NULL,
    delivered        boolean NOT NULL,
    idempotency_key  text,
    sent_at          timestamptz NOT NULL,
    PRIMARY KEY (execution_id, seq)
);
CREATE INDEX latch_signals_buffered ON latch_signals (execution_id, name, seq) WHERE NOT consumed;
CREATE UNIQUE INDEX latch_signals_key ON latch_signals (execution_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
