DROP TABLE console_sessions;
DROP INDEX api_keys_tenant;
DROP INDEX api_keys_key_id;
ALTER TABLE api_keys DROP COLUMN last_used_at;
ALTER TABLE api_keys DROP COLUMN key_id;
ALTER TABLE tenants DROP COLUMN disabled;
