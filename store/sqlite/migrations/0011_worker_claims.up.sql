-- latch schema version 11: what each worker claims (store.WorkerSeen.Queues
-- and Kinds, the filters of its latest claim), so that Explain can tell
-- ready work no live worker claims. Each is a JSON array of strings; NULL
-- claims every queue (every kind), as does a worker reported before this
-- version.
ALTER TABLE workers ADD COLUMN queues TEXT;
ALTER TABLE workers ADD COLUMN kinds TEXT;
