-- latch schema version 16: events and subscriptions (store/events.go,
-- doc.go "Events").
--
-- A tenant's events are rows of latch_events, kept until Prune deletes
-- them at expires_at (published_at plus the tenant's event_retention at the
-- publish). seq is the publish order: events of one (tenant, name) are
-- inserted one after the other under the name's advisory lock, so it
-- follows the order in which their publishes decided. size is what the
-- event counts in latch_storage.stored_bytes (store.EventSize): added by
-- its publish, taken back by the delete that removes it. An idempotency
-- key is unique within the tenant while its event is kept (the index
-- arbitrates concurrent publishes of one key); answer is the first
-- publish's answer (store.MarshalPublishAnswer), which a repeat returns.
ALTER TABLE latch_tenants ADD COLUMN event_retention bigint NOT NULL DEFAULT 86400000000000
    CHECK (event_retention >= 0);

CREATE TABLE latch_events (
    id               uuid PRIMARY KEY,
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    tenant           text NOT NULL REFERENCES latch_tenants (name) ON DELETE CASCADE,
    name             text NOT NULL,
    key              text,
    data             text NOT NULL,
    published_at     timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    size             bigint NOT NULL,
    idempotency_key  text,
    answer           text
);

-- A wait's oldest match: the tenant's events of a name in publish order,
-- and those of one key.
CREATE INDEX latch_events_by_name ON latch_events (tenant, name, published_at, seq);
CREATE INDEX latch_events_by_key ON latch_events (tenant, name, key, published_at, seq)
    WHERE key IS NOT NULL;
-- Prune's expired events.
CREATE INDEX latch_events_expiry ON latch_events (expires_at);
CREATE UNIQUE INDEX latch_events_idempotency ON latch_events (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- The events each execution consumed (a wait ended by an event, at
-- Suspend or by a publish): one per recorded step at most, deleted with
-- the execution (latch_delete_history), not with the event.
CREATE TABLE latch_event_consumed (
    execution_id  uuid NOT NULL,
    event_id      uuid NOT NULL,
    PRIMARY KEY (execution_id, event_id)
);

CREATE TABLE latch_subscriptions (
    tenant             text NOT NULL REFERENCES latch_tenants (name) ON DELETE CASCADE,
    name               text NOT NULL,
    event              text NOT NULL,
    kind               text NOT NULL,
    queue              text NOT NULL,
    priority           integer NOT NULL,
    max_attempts       integer NOT NULL,
    timeout_seconds    integer NOT NULL,
    concurrency_key    text NOT NULL,
    concurrency_limit  integer NOT NULL,
    enabled            boolean NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    PRIMARY KEY (tenant, name)
);

-- A publish's subscriptions, in name order.
CREATE INDEX latch_subscriptions_event ON latch_subscriptions (tenant, event, name) WHERE enabled;

-- A wait for an event is suspended with waiting_for 'event:' || name, the
-- key it matches (wait_key, NULL = any) and the earliest publish it matches
-- (wait_since, set only on such a wait: it tells it from a wait for a
-- signal of the same name). A publish finds its waiters by index.
ALTER TABLE latch_executions
    ADD COLUMN wait_key text,
    ADD COLUMN wait_since timestamptz;
CREATE INDEX latch_executions_event_waits ON latch_executions (tenant, waiting_for)
    WHERE status = 'suspended' AND wait_since IS NOT NULL;

-- The journal, signals, runs and consumed events of the executions ids go
-- (their executions are deleted by the caller); answers how many runs.
CREATE OR REPLACE FUNCTION latch_delete_history(ids uuid[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    done bigint;
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN 0;
    END IF;
    DELETE FROM latch_steps WHERE execution_id = ANY(ids);
    DELETE FROM latch_signals WHERE execution_id = ANY(ids);
    DELETE FROM latch_event_consumed WHERE execution_id = ANY(ids);
    DELETE FROM latch_runs WHERE execution_id = ANY(ids);
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN done;
END
$$;
