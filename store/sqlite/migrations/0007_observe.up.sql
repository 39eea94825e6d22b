-- latch schema version 7: what the console and the metrics observe
-- (store/observe.go) and the trace context (store/trace.go). Times are unix
-- nanoseconds (UTC), like 0001.
--
-- trace_parent is the submission's W3C traceparent (NULL: none), handed to
-- each lease. dedup_hits counts the submits and schedule ticks whose dedup
-- key answered with the execution instead of a new one, the latest at
-- last_dedup_hit_at (NULL: never); executions stored before this version
-- count none.
ALTER TABLE executions ADD COLUMN trace_parent TEXT;
ALTER TABLE executions ADD COLUMN dedup_hits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN last_dedup_hit_at INTEGER;

-- QueueStats reads the executions that are not terminal from the partial
-- indexes that already hold them, made covering here: the claim's queue
-- (queued and scheduled) and the rescuer's leases (running) carry each
-- entry's queue and status as trailing columns, which changes neither their
-- order nor when a write touches them; a new index holds the suspended. So
-- its cost follows the executions in flight, not the table's history, and a
-- claim or a complete pays nothing more. (An index over every live execution
-- answered it as fast but cost a drain 18 % of its throughput, measured.)
DROP INDEX executions_ready_tenant;
CREATE INDEX executions_ready_tenant ON executions (tenant, priority DESC, run_at, id, queue, status)
    WHERE status IN ('queued', 'scheduled');
DROP INDEX executions_leases;
CREATE INDEX executions_leases ON executions (lease_expires_at, tenant, queue)
    WHERE status = 'running';
CREATE INDEX executions_suspended ON executions (tenant, queue) WHERE status = 'suspended';

-- Servers (ServerReport): each one's latest report. Prune forgets those not
-- seen for store.PresenceKept.
CREATE TABLE servers (
    id            TEXT PRIMARY KEY,
    host          TEXT NOT NULL,
    version       TEXT NOT NULL,
    started_at    INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX servers_seen ON servers (last_seen_at);

-- Workers seen through a server, per tenant ('' for a server's own worker
-- slots and the admin key's). last_seen_at never moves back.
CREATE TABLE workers (
    server_id     TEXT NOT NULL,
    worker_id     TEXT NOT NULL,
    tenant        TEXT NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    PRIMARY KEY (server_id, worker_id, tenant)
) WITHOUT ROWID;
CREATE INDEX workers_seen ON workers (last_seen_at);
CREATE INDEX workers_tenant ON workers (tenant, server_id, worker_id);

-- Runs started and failed per tenant and whole UTC minute: the servers'
-- reports add their deltas. Prune drops minutes older than
-- store.ActivityKept.
CREATE TABLE activity (
    tenant    TEXT NOT NULL,
    minute    INTEGER NOT NULL,
    starts    INTEGER NOT NULL DEFAULT 0,
    failures  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, minute)
) WITHOUT ROWID;
CREATE INDEX activity_minute ON activity (minute);
