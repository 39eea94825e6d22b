DROP INDEX subscriptions_event;
DROP TABLE subscriptions;
ALTER TABLE tenants DROP COLUMN event_retention;
DROP INDEX executions_event_waits;
ALTER TABLE executions DROP COLUMN wait_since;
ALTER TABLE executions DROP COLUMN wait_key;
DROP TABLE event_consumed;
-- The events' bytes leave their tenants' counts with them.
UPDATE tenants SET stored_bytes = stored_bytes - (SELECT SUM(size) FROM events WHERE events.tenant = tenants.name)
    WHERE name IN (SELECT tenant FROM events);
DROP INDEX events_tenant;
DROP INDEX events_expiry;
DROP INDEX events_idempotency;
DROP INDEX events_match_key;
DROP INDEX events_match;
DROP TABLE events;
