DROP TABLE rate_limits;
DROP INDEX executions_schedule;
DROP TABLE schedules;
