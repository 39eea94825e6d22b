-- latch schema version 16: events and subscriptions (store/events.go,
-- doc.go "Events").
--
-- Neither events nor subscriptions have a foreign key to their tenant:
-- DeleteTenant deletes them by index (latch_delete_events), where a
-- cascade's plan, made once per connection, could read the table whole.
-- Publish and PutSubscription hold the tenant row (FOR KEY SHARE) from
-- their start, so neither writes for a tenant being deleted.
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
    tenant           text NOT NULL,
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
    tenant             text NOT NULL,
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

-- As with the runs (schema 10): statements plan once per connection and
-- keep the plan, and one made while latch_events looked empty would read
-- it whole on every wait, and for each of its rows the consumed events.
-- These functions leave no sequential scan to choose.

-- latch_event_match answers a wait's oldest match: the event of tenant t
-- named n (of key k, NULL = any key), published at or after since (NULL:
-- execution x's created_at), retained at at, that x has not consumed.
CREATE FUNCTION latch_event_match(t text, n text, k text, since timestamptz, x uuid, at timestamptz)
RETURNS TABLE (id uuid, key text, data text, published_at timestamptz)
LANGUAGE sql STABLE
SET enable_seqscan = off
SET jit = off
AS $$
    SELECT ev.id, coalesce(ev.key, ''), ev.data, ev.published_at FROM latch_events ev
    WHERE ev.tenant = t AND ev.name = n AND (k IS NULL OR ev.key = k)
      AND ev.published_at >= coalesce(since, (SELECT e.created_at FROM latch_executions e WHERE e.id = x))
      AND ev.expires_at > at
      AND NOT EXISTS (SELECT 1 FROM latch_event_consumed c WHERE c.execution_id = x AND c.event_id = ev.id)
    ORDER BY ev.published_at, ev.seq LIMIT 1
$$;

-- latch_prune_events deletes up to lim events whose expires_at has come
-- by due, with their idempotency keys, and takes their bytes from their
-- tenants' counts, the tenants in name order (as every statement moves
-- them); answers how many.
CREATE FUNCTION latch_prune_events(due timestamptz, lim integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    tenants text[];
    sizes bigint[];
    done bigint;
BEGIN
    WITH d AS (
        DELETE FROM latch_events WHERE id IN (
            SELECT ev.id FROM latch_events ev WHERE ev.expires_at <= due
            ORDER BY ev.expires_at LIMIT lim FOR UPDATE SKIP LOCKED)
        RETURNING tenant, size
    ), g AS (
        SELECT d.tenant, sum(d.size)::bigint AS n, count(*) AS c FROM d GROUP BY d.tenant
    )
    SELECT array_agg(g.tenant ORDER BY g.tenant), array_agg(g.n ORDER BY g.tenant), coalesce(sum(g.c), 0)::bigint
    INTO tenants, sizes, done FROM g;
    FOR i IN 1 .. coalesce(cardinality(tenants), 0) LOOP
        PERFORM latch_storage_count(tenants[i], -sizes[i], false);
    END LOOP;
    RETURN done;
END
$$;

-- latch_delete_events deletes tenant t's events and subscriptions
-- (DeleteTenant); answers how many events.
CREATE FUNCTION latch_delete_events(t text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    done bigint;
BEGIN
    DELETE FROM latch_subscriptions WHERE tenant = t;
    DELETE FROM latch_events WHERE tenant = t;
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN done;
END
$$;
