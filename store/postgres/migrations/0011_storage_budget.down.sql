DROP TRIGGER latch_storage_delete ON latch_executions;
DROP TRIGGER latch_storage_update ON latch_executions;
DROP TRIGGER latch_storage_insert ON latch_executions;
DROP FUNCTION latch_storage_updated();
DROP FUNCTION latch_storage_deleted();
DROP FUNCTION latch_storage_inserted();
DROP FUNCTION latch_storage_count(text, bigint, boolean);
ALTER TABLE latch_executions DROP COLUMN stored_bytes;
DROP TABLE latch_storage;
