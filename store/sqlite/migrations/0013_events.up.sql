-- latch schema version 13: events and subscriptions (store/events.go).
--
-- events holds a tenant's published events while they are retained: seq is
-- publish order (a wait consumes the oldest match by published_at, then
-- seq), size what the event counts in its tenant's stored_bytes until Prune
-- deletes it at expires_at. idempotency_key, when the publish had one, is
-- unique within the tenant while the event is kept, and answer is the
-- publish's answer (store.MarshalPublishAnswer) that a repeat of the key
-- returns.
CREATE TABLE events (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    tenant          TEXT NOT NULL,
    name            TEXT NOT NULL,
    key             TEXT,
    data            TEXT NOT NULL,
    published_at    INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    size            INTEGER NOT NULL,
    idempotency_key TEXT,
    answer          TEXT NOT NULL DEFAULT ''
);
-- A wait's oldest match, with a key and without.
CREATE INDEX events_match ON events (tenant, name, published_at, seq);
CREATE INDEX events_match_key ON events (tenant, name, key, published_at, seq) WHERE key IS NOT NULL;
-- A publish's repeat.
CREATE UNIQUE INDEX events_idempotency ON events (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- Prune's candidates.
CREATE INDEX events_expiry ON events (expires_at);
-- DeleteTenant.
CREATE INDEX events_tenant ON events (tenant, seq);

-- The events an execution consumed (each at most once): one per recorded
-- step at most, deleted with the execution.
CREATE TABLE event_consumed (
    execution_id TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    PRIMARY KEY (execution_id, event_id)
) WITHOUT ROWID;

-- A suspended wait for an event: waiting_for is store.EventWaitFor(name),
-- wait_since (never NULL for such a wait; NULL in every other status and
-- for every other wait) the earliest published_at it matches, wait_key
-- its key (NULL = any).
ALTER TABLE executions ADD COLUMN wait_key TEXT;
ALTER TABLE executions ADD COLUMN wait_since INTEGER;
-- A publish's waiters.
CREATE INDEX executions_event_waits ON executions (tenant, waiting_for)
    WHERE status = 'suspended' AND wait_since IS NOT NULL;

ALTER TABLE tenants ADD COLUMN event_retention INTEGER NOT NULL DEFAULT 86400000000000;

CREATE TABLE subscriptions (
    tenant            TEXT NOT NULL,
    name              TEXT NOT NULL,
    event             TEXT NOT NULL,
    kind              TEXT NOT NULL,
    queue             TEXT NOT NULL,
    priority          INTEGER NOT NULL,
    max_attempts      INTEGER NOT NULL,
    timeout_seconds   INTEGER NOT NULL,
    concurrency_key   TEXT NOT NULL,
    concurrency_limit INTEGER NOT NULL,
    enabled           INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;
-- A publish's subscriptions, in name order.
CREATE INDEX subscriptions_event ON subscriptions (tenant, event, name);
