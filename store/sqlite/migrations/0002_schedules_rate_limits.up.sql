-- Schedules and rate limits. Times are unix nanoseconds (UTC), durations
-- nanoseconds, like 0001.

-- A tenant's recurring submissions. FireSchedule compare-and-sets
-- next_run_at inside the transaction that admits (or skips) the tick.
CREATE TABLE schedules (
    tenant            TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    cron              TEXT NOT NULL,
    every             INTEGER NOT NULL,
    timezone          TEXT NOT NULL,
    kind              TEXT NOT NULL,
    payload           TEXT NOT NULL,
    queue             TEXT NOT NULL,
    priority          INTEGER NOT NULL,
    max_attempts      INTEGER NOT NULL,
    timeout_seconds   INTEGER NOT NULL,
    rate_key          TEXT NOT NULL,
    overlap           TEXT NOT NULL,
    catchup           TEXT NOT NULL,
    enabled           INTEGER NOT NULL,
    next_run_at       INTEGER NOT NULL,
    last_run_at       INTEGER,
    last_execution_id TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;
-- Due schedules, for the scheduler (the primary key follows next_run_at in
-- the index, so ties come out in tenant, name order).
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled = 1;

-- Executions of a schedule per tenant and status: the overlap-skip check
-- (is one not terminal?) and a schedule's Running (is one running?) are
-- seeks on (tenant, schedule, status).
CREATE INDEX executions_schedule ON executions (tenant, schedule, status)
    WHERE schedule IS NOT NULL;

-- A tenant's token bucket per rate key (GCRA). tat is the theoretical
-- arrival time, NULL while the bucket was never used; Claim moves it in the
-- transaction that starts the execution.
CREATE TABLE rate_limits (
    tenant      TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    rate_key    TEXT NOT NULL,
    rate        INTEGER NOT NULL,
    per         INTEGER NOT NULL,
    burst       INTEGER NOT NULL,
    tat         INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant, rate_key)
) WITHOUT ROWID;
