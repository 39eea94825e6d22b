DROP TABLE latch_runs;
ALTER TABLE latch_executions DROP COLUMN runs;
