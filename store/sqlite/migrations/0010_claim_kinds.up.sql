-- latch schema version 10: a claim filtered by kind reads the ready
-- executions of its kinds only.
--
-- Every in-process worker claims for the kinds it has handlers for. The
-- queue of version 4 (executions_ready_tenant) is per tenant, not per kind,
-- so such a claim walked a tenant's whole queue to find its kinds: 3,000
-- ready executions of a kind no worker handles cost every claim 3,000 rows
-- read inside its write transaction. The lanes: a tenant's ready and
-- future executions of one kind, in its claim order (claim.go, claimQuery
-- and turnQuery).
CREATE INDEX executions_ready_kind ON executions (tenant, kind, priority DESC, run_at, id, queue, status)
    WHERE status IN ('queued', 'scheduled');
