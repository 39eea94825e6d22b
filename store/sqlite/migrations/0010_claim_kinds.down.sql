DROP INDEX executions_ready_kind;
