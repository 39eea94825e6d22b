ALTER TABLE executions DROP COLUMN stored_bytes;
ALTER TABLE tenants DROP COLUMN stored_bytes;
ALTER TABLE tenants DROP COLUMN max_stored_bytes;
