DROP FUNCTION latch_abort(text);
DROP TABLE latch_dedup_keys;
DROP TABLE latch_executions;
DROP TABLE latch_api_keys;
DROP TABLE latch_quota_shards;
DROP TABLE latch_tenants;
