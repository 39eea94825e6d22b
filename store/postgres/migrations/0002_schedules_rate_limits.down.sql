DROP TABLE latch_rate_limits;
DROP INDEX latch_executions_schedule;
DROP TABLE latch_schedules;
