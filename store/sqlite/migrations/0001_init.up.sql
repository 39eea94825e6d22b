-- Times are unix nanoseconds (UTC). Durations are nanoseconds.
CREATE TABLE tenants (
    name          TEXT PRIMARY KEY,
    max_inflight  INTEGER NOT NULL,
    inflight      INTEGER NOT NULL DEFAULT 0,
    dedup_ttl     INTEGER NOT NULL,
    retention     INTEGER NOT NULL,
    created_at    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE api_keys (
    hash        TEXT PRIMARY KEY,
    tenant      TEXT REFERENCES tenants(name) ON DELETE CASCADE,
    admin       INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL
) WITHOUT ROWID;
-- At most one admin key: EnsureAdminKey relies on this index.
CREATE UNIQUE INDEX api_keys_one_admin ON api_keys (admin) WHERE admin = 1;

CREATE TABLE executions (
    id                TEXT PRIMARY KEY,
    tenant            TEXT NOT NULL,
    kind              TEXT NOT NULL,
    queue             TEXT NOT NULL,
    priority          INTEGER NOT NULL,
    status            TEXT NOT NULL,
    dedup_key         TEXT,
    concurrency_key   TEXT,
    concurrency_limit INTEGER,
    rate_key          TEXT,
    payload           TEXT NOT NULL,
    result            TEXT,
    error             TEXT,
    attempt           INTEGER NOT NULL DEFAULT 0,
    max_attempts      INTEGER NOT NULL,
    timeout_seconds   INTEGER NOT NULL,
    schedule          TEXT,
    created_at        INTEGER NOT NULL,
    run_at            INTEGER NOT NULL,
    started_at        INTEGER,
    finished_at       INTEGER,
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    worker_id         TEXT,
    lease_token       TEXT,
    lease_expires_at  INTEGER
) WITHOUT ROWID;

-- The queue: ready and future executions in claim order.
CREATE INDEX executions_ready ON executions (priority DESC, run_at, id)
    WHERE status IN ('queued', 'scheduled');
-- Leases, for the rescuer.
CREATE INDEX executions_leases ON executions (lease_expires_at)
    WHERE status = 'running';
-- Running executions per concurrency key, for claims.
CREATE INDEX executions_concurrency ON executions (concurrency_key)
    WHERE status = 'running' AND concurrency_key IS NOT NULL;
-- Finished executions, for the pruner.
CREATE INDEX executions_finished ON executions (finished_at)
    WHERE finished_at IS NOT NULL;
-- Listing per tenant, newest first (ids are UUIDv7, so id order is time order).
CREATE INDEX executions_tenant ON executions (tenant, id);
CREATE INDEX executions_tenant_dedup ON executions (tenant, dedup_key)
    WHERE dedup_key IS NOT NULL;

-- A live (tenant, dedup_key) maps to exactly one execution (I1). The row is
-- written in the same transaction as the execution, and removed with it.
CREATE TABLE dedup_keys (
    tenant        TEXT NOT NULL,
    dedup_key     TEXT NOT NULL,
    execution_id  TEXT NOT NULL,
    expires_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant, dedup_key)
) WITHOUT ROWID;
CREATE INDEX dedup_keys_execution ON dedup_keys (execution_id);
CREATE INDEX dedup_keys_expires ON dedup_keys (expires_at);
