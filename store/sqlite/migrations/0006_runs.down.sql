DROP TABLE execution_runs;
ALTER TABLE executions DROP COLUMN runs;
