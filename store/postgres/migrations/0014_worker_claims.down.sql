-- Back to schema version 13: workers without their claim filters.
ALTER TABLE latch_workers DROP COLUMN kinds;
ALTER TABLE latch_workers DROP COLUMN queues;
