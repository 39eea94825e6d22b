-- latch schema version 8: what operators observe (store/observe.go,
-- docs/tracing.md): the trace context and dedup hits of an execution,
-- server reports, workers seen, and activity minutes.
--
-- trace_parent: the submission's W3C traceparent, NULL for none. dedup_hits
-- and last_dedup_hit_at: the submits and schedule fires that the execution's
-- dedup key answered with it, counted by the statement that answers each
-- (an UPDATE of the row, dedup_hits = dedup_hits + n, under its row lock).
-- None is indexed (a hit's update is HOT where its page has room); the default is a constant,
-- so adding the columns rewrites nothing and every execution has 0 hits.
ALTER TABLE latch_executions
    ADD COLUMN trace_parent text,
    ADD COLUMN dedup_hits integer NOT NULL DEFAULT 0,
    ADD COLUMN last_dedup_hit_at timestamptz;

-- The executions in flight by tenant and queue, for QueueStats: an index
-- only scan of this index answers it (status and run_at are in it), however
-- many finished executions the table holds. A submit, a claim, a retry and
-- a promotion (each writes a new row version with a status in flight) add
-- one entry to it; an execution that ends adds none.
CREATE INDEX latch_executions_inflight ON latch_executions (tenant, queue, status, run_at)
    WHERE status IN ('scheduled', 'queued', 'running', 'suspended');

-- A server's latest report (ServerReport): one row per server id, rewritten
-- every store.ReportEvery; Prune forgets a server not seen for
-- store.PresenceKept.
CREATE TABLE latch_servers (
    id            text PRIMARY KEY,
    host          text NOT NULL,
    version       text NOT NULL,
    started_at    timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL
) WITH (fillfactor = 50);
CREATE INDEX latch_servers_seen ON latch_servers (last_seen_at);

-- The workers that claimed through a server: tenant '' for a server's own
-- worker slots (and the admin key's). last_seen_at never moves back.
-- DeleteTenant removes a tenant's; no foreign key, so a report names any.
CREATE TABLE latch_workers (
    server_id     text NOT NULL,
    tenant        text NOT NULL,
    worker_id     text NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    PRIMARY KEY (server_id, tenant, worker_id)
) WITH (fillfactor = 50);
CREATE INDEX latch_workers_tenant ON latch_workers (tenant, last_seen_at);
CREATE INDEX latch_workers_seen ON latch_workers (last_seen_at);

-- Runs started and failed per tenant and whole UTC minute: each report adds
-- its deltas (INSERT ... ON CONFLICT DO UPDATE, in (tenant, minute) order),
-- so two servers' counts sum. Prune drops minutes older than
-- store.ActivityKept, DeleteTenant a tenant's.
CREATE TABLE latch_activity (
    tenant    text NOT NULL,
    minute    timestamptz NOT NULL,
    starts    bigint NOT NULL DEFAULT 0,
    failures  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, minute)
) WITH (fillfactor = 50);
CREATE INDEX latch_activity_minute ON latch_activity (minute);
