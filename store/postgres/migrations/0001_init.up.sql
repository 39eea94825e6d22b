-- latch schema version 1.
--
-- Every table is prefixed latch_ so that latch can share a schema with other
-- applications; point search_path at a schema of its own to keep it apart.
-- Times are timestamptz (microseconds, UTC); tenant durations are bigint
-- nanoseconds, as store.Tenant holds them.

CREATE TABLE latch_tenants (
    name          text PRIMARY KEY,
    max_inflight  integer NOT NULL CHECK (max_inflight >= 0),
    dedup_ttl     bigint NOT NULL CHECK (dedup_ttl >= 0),
    retention     bigint NOT NULL CHECK (retention >= 0),
    created_at    timestamptz NOT NULL
);

-- Quota (I3). A tenant's max_inflight is held as units spread over a fixed
-- number of shard rows (doc.go, "Quota"): admission takes a unit from a shard
-- no other transaction holds (FOR UPDATE SKIP LOCKED), finishing gives one
-- back, so concurrent submits of one tenant do not queue behind one row.
--   sum(free) = max_inflight - inflight       while free >= 0 on every shard;
--   free = -1 on every shard ("frozen") and debt (kept on shard 0 only)
--   = inflight - max_inflight once max_inflight was lowered below inflight.
-- fillfactor leaves room on the page for HOT updates of these hot rows.
CREATE TABLE latch_quota_shards (
    tenant  text NOT NULL REFERENCES latch_tenants (name) ON DELETE CASCADE,
    shard   smallint NOT NULL,
    free    integer NOT NULL CHECK (free >= -1),
    debt    integer NOT NULL DEFAULT 0 CHECK (debt >= 0),
    PRIMARY KEY (tenant, shard)
) WITH (fillfactor = 30);

CREATE TABLE latch_api_keys (
    hash        text PRIMARY KEY,
    tenant      text REFERENCES latch_tenants (name) ON DELETE CASCADE,
    admin       boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL,
    CHECK (admin = (tenant IS NULL))
);
-- At most one admin key: EnsureAdminKey relies on this index.
CREATE UNIQUE INDEX latch_api_keys_one_admin ON latch_api_keys (admin) WHERE admin;

-- An execution row is also its queue entry (I2): a claim leases the row in
-- place and never deletes it. No foreign key to latch_tenants: a key check
-- on every insert would lock the tenant row and serialise submits again.
CREATE TABLE latch_executions (
    id                 uuid PRIMARY KEY,
    tenant             text NOT NULL,
    kind               text NOT NULL,
    queue              text NOT NULL,
    priority           integer NOT NULL,
    status             text NOT NULL CHECK (status IN
                       ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled', 'skipped')),
    dedup_key          text,
    concurrency_key    text,
    concurrency_limit  integer,
    rate_key           text,
    payload            text NOT NULL,
    result             text,
    error              text,
    attempt            integer NOT NULL DEFAULT 0,
    max_attempts       integer NOT NULL,
    timeout_seconds    integer NOT NULL,
    schedule           text,
    created_at         timestamptz NOT NULL,
    run_at             timestamptz NOT NULL,
    started_at         timestamptz,
    finished_at        timestamptz,
    cancel_requested   boolean NOT NULL DEFAULT false,
    worker_id          text,
    lease_token        uuid,
    lease_expires_at   timestamptz
);

-- The queue: ready and future executions in claim order.
CREATE INDEX latch_executions_ready ON latch_executions (priority DESC, run_at, id)
    WHERE status IN ('queued', 'scheduled');
-- Leases, for the rescuer.
CREATE INDEX latch_executions_leases ON latch_executions (lease_expires_at)
    WHERE status = 'running';
-- Running executions per concurrency key, for claims (I4).
CREATE INDEX latch_executions_concurrency ON latch_executions (concurrency_key)
    WHERE status = 'running' AND concurrency_key IS NOT NULL;
-- Finished executions, for the pruner.
CREATE INDEX latch_executions_finished ON latch_executions (finished_at)
    WHERE finished_at IS NOT NULL;
-- Listing per tenant, newest first (ids are UUIDv7: id order is time order).
CREATE INDEX latch_executions_tenant ON latch_executions (tenant, id);
CREATE INDEX latch_executions_tenant_dedup ON latch_executions (tenant, dedup_key)
    WHERE dedup_key IS NOT NULL;

-- A live (tenant, dedup_key) maps to exactly one execution (I1): the primary
-- key is the arbiter of every concurrent submit of one key. The row is
-- written in the same transaction as its execution and removed with it.
CREATE TABLE latch_dedup_keys (
    tenant        text NOT NULL,
    dedup_key     text NOT NULL,
    execution_id  uuid NOT NULL,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant, dedup_key)
);
CREATE INDEX latch_dedup_keys_expires ON latch_dedup_keys (expires_at);

-- latch_abort ends the statement that calls it with SQLSTATE LA001, rolling
-- back everything the statement did. The single-statement fast paths call it
-- when they cannot finish (no quota unit at hand); the store then runs the
-- operation again as a transaction that can wait. It changes nothing.
CREATE FUNCTION latch_abort(reason text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'LA001', MESSAGE = 'latch: ' || reason;
END
$$;
