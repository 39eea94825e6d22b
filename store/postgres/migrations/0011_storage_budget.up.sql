-- latch schema version 11: a tenant's storage budget (store/storage.go).
--
-- latch_executions.stored_bytes is what an execution counts in its
-- tenant's budget: the bytes the tenant sent to be kept with it (payload,
-- step results, signal data, result, failure texts), which the statements
-- that write them add. latch_storage holds each tenant's budget
-- (max_bytes, store.DefaultMaxStoredBytes) and the sum (stored_bytes); a
-- row of its own, not latch_tenants', whose rows the claims update.
--
-- The sum is kept by triggers on latch_executions, in the statement that
-- changes an execution's count, whichever statement it is: an insert adds
-- its count, a delete takes it back, an update adds the difference. A
-- change that would take the sum past the budget ends the statement with
-- SQLSTATE LA002, rolling it back: the fast paths then run as
-- transactions (like latch_abort's LA001), which check first and refuse
-- with store.ErrStorageExceeded. The one increase never refused is a
-- failure's text: an attempt that ends (running, then not) without a new
-- result.
--
-- Executions stored before this version count their payload, result and
-- error and the journal's and signals' bytes they hold now, and their
-- tenants the sum: the usage at the migration.
CREATE TABLE latch_storage (
    tenant        text PRIMARY KEY REFERENCES latch_tenants (name) ON DELETE CASCADE,
    max_bytes     bigint NOT NULL DEFAULT 1073741824,
    stored_bytes  bigint NOT NULL DEFAULT 0
);
ALTER TABLE latch_executions ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0;

UPDATE latch_executions e SET stored_bytes = octet_length(e.payload)
    + coalesce(octet_length(e.result), 0) + coalesce(octet_length(e.error), 0)
    + coalesce((SELECT sum(octet_length(s.result)) FROM latch_steps s WHERE s.execution_id = e.id), 0)
    + coalesce((SELECT sum(octet_length(g.data)) FROM latch_signals g WHERE g.execution_id = e.id), 0);
INSERT INTO latch_storage (tenant, stored_bytes)
SELECT t.name, coalesce((SELECT sum(e.stored_bytes) FROM latch_executions e WHERE e.tenant = t.name), 0)
FROM latch_tenants t;

-- latch_storage_count adds delta bytes to tenant's sum; enforce refuses
-- (LA002) a sum past the budget. A tenant deleted by the statement (its
-- executions with it, DeleteTenant) has no sum left to change.
CREATE FUNCTION latch_storage_count(t text, delta bigint, enforce boolean) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    over boolean;
BEGIN
    UPDATE latch_storage SET stored_bytes = stored_bytes + delta
    WHERE tenant = t AND EXISTS (SELECT 1 FROM latch_tenants WHERE name = t)
    RETURNING stored_bytes > max_bytes INTO over;
    IF enforce AND delta > 0 AND over THEN
        RAISE EXCEPTION USING ERRCODE = 'LA002',
            MESSAGE = 'latch: tenant ' || t || ': storage budget exceeded';
    END IF;
END
$$;

-- The functions keep the schema they were made in (SET search_path FROM
-- CURRENT): a statement naming latch_executions by its schema, on a
-- connection whose search_path does not hold it, still finds the sums.
--
-- An insert or a delete moves each tenant's sum once per statement (a
-- batch of 100, a prune of 1,000: one update of the tenant's row, the
-- tenants' rows locked in name order, as every statement locks them), an
-- update once per row whose count it changes (a complete, a fail, a step,
-- a signal: one row).
CREATE FUNCTION latch_storage_inserted() RETURNS trigger
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT n.tenant, sum(n.stored_bytes)::bigint AS delta FROM new_rows n
             GROUP BY n.tenant HAVING sum(n.stored_bytes) <> 0 ORDER BY n.tenant LOOP
        PERFORM latch_storage_count(r.tenant, r.delta, true);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE FUNCTION latch_storage_deleted() RETURNS trigger
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT o.tenant, -sum(o.stored_bytes)::bigint AS delta FROM old_rows o
             GROUP BY o.tenant HAVING sum(o.stored_bytes) <> 0 ORDER BY o.tenant LOOP
        PERFORM latch_storage_count(r.tenant, r.delta, false);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE FUNCTION latch_storage_updated() RETURNS trigger
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM latch_storage_count(NEW.tenant, NEW.stored_bytes - OLD.stored_bytes,
        NOT (OLD.status = 'running' AND NEW.status <> 'running'
             AND NEW.result IS NOT DISTINCT FROM OLD.result));
    RETURN NULL;
END
$$;

CREATE TRIGGER latch_storage_insert AFTER INSERT ON latch_executions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION latch_storage_inserted();
CREATE TRIGGER latch_storage_delete AFTER DELETE ON latch_executions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION latch_storage_deleted();
CREATE TRIGGER latch_storage_update AFTER UPDATE OF stored_bytes ON latch_executions
    FOR EACH ROW WHEN (NEW.stored_bytes <> OLD.stored_bytes) EXECUTE FUNCTION latch_storage_updated();

-- Every tenant has its row, whoever creates the tenant: CreateTenant
-- writes it with the tenant's budget in the same statement (this insert
-- then finds it), and a server of the previous release, which knows
-- nothing of the budget, gets the default.
CREATE FUNCTION latch_storage_tenant_added() RETURNS trigger
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO latch_storage (tenant) VALUES (NEW.name) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER latch_storage_tenant AFTER INSERT ON latch_tenants
    FOR EACH ROW EXECUTE FUNCTION latch_storage_tenant_added();
