-- latch schema version 9: a tenant's storage budget (store/storage.go).
--
-- executions.stored_bytes is what an execution counts in its tenant's
-- budget: the bytes the tenant sent to be kept with it (payload, step
-- results, signal data, result, failure texts). tenants.stored_bytes is
-- their sum, changed in the transaction that changes them;
-- max_stored_bytes is the budget (store.DefaultMaxStoredBytes, 1 GiB).
--
-- Executions stored before this version count their payload, result and
-- error and the journal's and signals' bytes they hold now, and their
-- tenants the sum: the usage at the migration, not what was ever sent.
ALTER TABLE tenants ADD COLUMN max_stored_bytes INTEGER NOT NULL DEFAULT 1073741824;
ALTER TABLE tenants ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0;

UPDATE executions SET stored_bytes = length(CAST(payload AS BLOB))
    + coalesce(length(CAST(result AS BLOB)), 0)
    + coalesce(length(CAST(error AS BLOB)), 0)
    + coalesce((SELECT sum(length(CAST(s.result AS BLOB))) FROM flow_steps s WHERE s.execution_id = executions.id), 0)
    + coalesce((SELECT sum(length(CAST(g.data AS BLOB))) FROM flow_signals g WHERE g.execution_id = executions.id), 0);
UPDATE tenants SET stored_bytes =
    coalesce((SELECT sum(e.stored_bytes) FROM executions e WHERE e.tenant = tenants.name), 0);
