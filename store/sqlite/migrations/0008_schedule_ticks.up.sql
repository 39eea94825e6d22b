-- latch schema version 8: a schedule's ticks in listing order.
--
-- List with a schedule filter (the console's schedule page, GET
-- /api/executions?schedule=) pages a tenant's executions of one schedule
-- newest first. executions_schedule (tenant, schedule, status) answers the
-- overlap check but not that order, so the planner walked the tenant's whole
-- history through executions_tenant (tenant, id) to find a rare schedule's
-- ticks: 100-170 ms for 10 ticks among a tenant's 100,000 executions. This
-- index holds only executions fired by a schedule, so the other writes pay
-- nothing for it.
CREATE INDEX executions_schedule_ticks ON executions (tenant, schedule, id)
    WHERE schedule IS NOT NULL;
