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

-- QueueStats reads the executions that are not terminal through the
-- partial indexes that already hold them (queued and scheduled:
-- executions_ready_tenant; running: executions_leases) and this one for
-- the suspended, so its cost follows the executions in flight, not the
-- table's history. An index over every live execution would answer it from
-- the index alone, but every claim and complete would pay to keep it: 18 %
-- of a drain's throughput, measured. This one changes only when a flow
-- suspends or resumes.
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
