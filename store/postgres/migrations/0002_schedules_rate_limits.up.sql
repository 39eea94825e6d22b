-- latch schema version 2: schedules and rate limits.
--
-- Times are timestamptz (microseconds, UTC); durations are bigint
-- nanoseconds, as store.Schedule and store.RateLimit hold them.

-- A tenant's recurring submissions. FireSchedule locks the row (FOR UPDATE),
-- compare-and-sets next_run_at and admits or skips the tick in the same
-- transaction. Empty strings stand for "none" (cron of an every-schedule,
-- rate_key).
CREATE TABLE latch_schedules (
    tenant             text NOT NULL REFERENCES latch_tenants (name) ON DELETE CASCADE,
    name               text NOT NULL,
    cron               text NOT NULL,
    every              bigint NOT NULL CHECK (every >= 0),
    timezone           text NOT NULL,
    kind               text NOT NULL,
    payload            text NOT NULL,
    queue              text NOT NULL,
    priority           integer NOT NULL,
    max_attempts       integer NOT NULL,
    timeout_seconds    integer NOT NULL,
    rate_key           text NOT NULL,
    overlap            text NOT NULL CHECK (overlap IN ('skip', 'queue', 'allow')),
    catchup            text NOT NULL CHECK (catchup IN ('none', 'one')),
    enabled            boolean NOT NULL,
    next_run_at        timestamptz NOT NULL,
    last_run_at        timestamptz,
    last_execution_id  uuid,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    PRIMARY KEY (tenant, name)
);
-- Due schedules, for the scheduler (ListSchedules with DueBy).
CREATE INDEX latch_schedules_due ON latch_schedules (next_run_at) WHERE enabled;

-- The executions of a schedule that are not terminal, per tenant: the
-- overlap-skip check of FireSchedule and a schedule's Running on read.
CREATE INDEX latch_executions_schedule ON latch_executions (tenant, schedule)
    WHERE schedule IS NOT NULL AND status IN ('scheduled', 'queued', 'running');

-- A tenant's token bucket per rate key (GCRA, store.RateLimit). tat is the
-- theoretical arrival time, NULL while the bucket was never used. Claim locks
-- the rows of its candidates' keys (FOR UPDATE, in (tenant, rate_key) order)
-- and moves tat in the transaction that starts the executions.
CREATE TABLE latch_rate_limits (
    tenant      text NOT NULL REFERENCES latch_tenants (name) ON DELETE CASCADE,
    rate_key    text NOT NULL,
    rate        integer NOT NULL CHECK (rate >= 1),
    per         bigint NOT NULL CHECK (per >= 1000000),
    burst       integer NOT NULL CHECK (burst >= 1),
    tat         timestamptz,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant, rate_key)
);
