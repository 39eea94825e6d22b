-- latch schema version 14: what each worker claims (store.WorkerSeen.Queues
-- and Kinds, the filters of its latest claim), so that Explain can tell
-- ready work no live worker claims. Each is a JSON array of strings; NULL
-- claims every queue (every kind), as does a worker reported before this
-- version.
ALTER TABLE latch_workers ADD COLUMN queues text;
ALTER TABLE latch_workers ADD COLUMN kinds text;
