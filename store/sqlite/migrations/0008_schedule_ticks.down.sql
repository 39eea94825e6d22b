DROP INDEX executions_schedule_ticks;
