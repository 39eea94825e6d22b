-- latch schema version 9: a schedule's ticks in listing order.
--
-- List with a schedule filter (the console's schedule page, GET
-- /api/executions?schedule=) pages a tenant's executions of one schedule
-- newest first. latch_executions_schedule holds only those in flight (the
-- overlap check's), so the ticks that ended were found by examining the
-- tenant's executions one by one, at most List's scan bound per request: a
-- rare schedule's page came back empty with a cursor. This index holds only
-- executions fired by a schedule, so the other writes pay nothing for it.
CREATE INDEX latch_executions_schedule_ticks ON latch_executions (tenant, schedule, id)
    WHERE schedule IS NOT NULL;
