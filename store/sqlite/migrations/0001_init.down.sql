DROP TABLE dedup_keys;
DROP TABLE executions;
DROP TABLE api_keys;
DROP TABLE tenants;
