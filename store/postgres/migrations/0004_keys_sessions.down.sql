DROP TABLE latch_console_sessions;
DROP INDEX latch_api_keys_tenant;
DROP INDEX latch_api_keys_key_id;
ALTER TABLE latch_api_keys DROP COLUMN last_used_at;
ALTER TABLE latch_api_keys DROP COLUMN key_id;
ALTER TABLE latch_tenants DROP COLUMN disabled;
