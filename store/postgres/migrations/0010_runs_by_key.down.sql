DROP FUNCTION latch_delete_history(uuid[]);
DROP FUNCTION latch_drop_runs(uuid[], integer[]);
DROP FUNCTION latch_end_runs(uuid[], integer[], timestamptz[], text[], text[]);
