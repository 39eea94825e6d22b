-- latch schema version 4: revocable keys, disabled tenants, console sessions.

-- A disabled tenant's keys are refused (but for the calls of the leases
-- they hold), its schedules do not tick and its executions do not start.
ALTER TABLE latch_tenants ADD COLUMN disabled boolean NOT NULL DEFAULT false;

-- key_id is a key's public name (random, not derived from the key), so a
-- key can be listed and deleted without being shown. Keys stored before
-- this version get one here. last_used_at is recorded at most about once a
-- minute per key (TouchAPIKey), never on every request.
ALTER TABLE latch_api_keys ADD COLUMN key_id text;
ALTER TABLE latch_api_keys ADD COLUMN last_used_at timestamptz;
UPDATE latch_api_keys SET key_id = 'key_' || substr(md5(random()::text || hash || clock_timestamp()::text), 1, 16)
WHERE key_id IS NULL;
ALTER TABLE latch_api_keys ALTER COLUMN key_id SET NOT NULL;
CREATE UNIQUE INDEX latch_api_keys_key_id ON latch_api_keys (key_id);
CREATE INDEX latch_api_keys_tenant ON latch_api_keys (tenant, created_at) WHERE tenant IS NOT NULL;

-- Console sessions: the hash of the session's secret id, the hash of the
-- key it was opened with, and its expiry. Logging out deletes the row, so a
-- copied cookie stops working on every server; Prune removes expired rows.
CREATE TABLE latch_console_sessions (
    id_hash     text PRIMARY KEY,
    key_hash    text NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX latch_console_sessions_expires ON latch_console_sessions (expires_at);
