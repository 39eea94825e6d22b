-- Revocable keys, disabled tenants and console sessions. Times are unix
-- nanoseconds (UTC), like 0001.

-- A disabled tenant's keys are refused (but for the calls of the leases
-- they hold), its schedules do not tick and its executions do not start.
ALTER TABLE tenants ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0;

-- key_id is a key's public name (random, not derived from the key), so a
-- key can be listed and deleted without being shown. Keys stored before
-- this migration get one here. last_used_at is recorded at most about once
-- a minute per key (TouchAPIKey), never on every request.
ALTER TABLE api_keys ADD COLUMN key_id TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER;
UPDATE api_keys SET key_id = 'key_' || lower(hex(randomblob(8))) WHERE key_id IS NULL;
CREATE UNIQUE INDEX api_keys_key_id ON api_keys (key_id);
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at) WHERE tenant IS NOT NULL;

-- Console sessions: the hash of the session's secret id, the hash of the
-- key it was opened with, and its expiry. Logging out deletes the row, so a
-- copied cookie stops working on every server; Prune removes expired rows.
CREATE TABLE console_sessions (
    id_hash     TEXT PRIMARY KEY,
    key_hash    TEXT NOT NULL,
    expires_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);
