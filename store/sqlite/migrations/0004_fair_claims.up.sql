-- latch schema version 4: claims take turns across tenants (I12).
--
-- tenants.turn orders the tenants a claim serves: least recently served
-- (smallest turn) first, ties by name. A claim that leases executions of a
-- tenant sets the tenant's turn past every other (claim.go, saveTurns).
-- tenants_turn finds that largest turn; tenants_ready walks, in turn order,
-- only the enabled tenants with work in flight, so idle and disabled tenants
-- cost a claim nothing.
ALTER TABLE tenants ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tenants_turn ON tenants (turn);
CREATE INDEX tenants_ready ON tenants (turn, name) WHERE inflight > 0 AND disabled = 0;

-- The queue, per tenant: a tenant's ready and future executions in its own
-- claim order. It replaces the queue of version 1 in claim order across
-- every tenant, which no claim reads any more.
CREATE INDEX executions_ready_tenant ON executions (tenant, priority DESC, run_at, id)
    WHERE status IN ('queued', 'scheduled');
DROP INDEX executions_ready;
