-- latch schema version 12: a claim filtered by kind reads the ready
-- executions of its kinds only.
--
-- Every in-process worker claims for the kinds it has handlers for. The
-- queue of version 5 is per tenant, not per kind, so such a claim walked a
-- tenant's whole queue to find its kinds: 3,000 ready executions of a kind
-- no worker handles cost every claim 3,000 rows read inside its write
-- transaction (tens of milliseconds, and every other tenant's start
-- waited on it). The lanes: the queued executions of a tenant and kind in
-- their claim order, and the scheduled ones of a tenant and kind by run_at,
-- so that the due ones of a kind are a range.
CREATE INDEX latch_executions_queued_kind ON latch_executions (tenant, kind, priority DESC, run_at, id)
    WHERE status = 'queued';
CREATE INDEX latch_executions_scheduled_kind ON latch_executions (tenant, kind, run_at)
    WHERE status = 'scheduled';

-- latch_tenant_candidates locks (FOR UPDATE SKIP LOCKED) and returns up to
-- lvl ready executions of tenant t in its claim order (priority DESC,
-- run_at, id), besides those given: queued ones, and with due its
-- scheduled ones due by now; of queues and kinds as latch_claim_candidates
-- takes them, those whose concurrency key is at its limit left out, and
-- limited as there. Without kinds it walks the tenant's queue
-- (latch_executions_queued) and due range (latch_executions_scheduled);
-- with kinds, each kind's lane (latch_executions_queued_kind, _kind), up
-- to lvl rows each, merged: an execution of another kind is never read.
-- A lane may lock a few more than the merge keeps (at most lvl per kind),
-- which its transaction holds until it ends. Its planner settings are
-- latch_claim_candidates's, and sequential scans are off as well: a plan
-- made while the table is small (a new deployment) would otherwise read
-- the whole table for each lane, and keep doing so once it is large.
CREATE FUNCTION latch_tenant_candidates(t text, now timestamptz, lvl integer, given uuid[], queues text[],
    kinds text[], due boolean)
RETURNS TABLE (cid uuid, cpriority integer, crun_at timestamptz, climited boolean)
LANGUAGE plpgsql VOLATILE
SET enable_bitmapscan = off
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
    IF coalesce(cardinality(kinds), 0) = 0 THEN
        RETURN QUERY
        WITH q AS MATERIALIZED (
            SELECT x.id, x.priority, x.run_at, x.tenant, x.concurrency_key, x.rate_key
            FROM latch_executions x
            WHERE x.tenant = t AND x.status = 'queued'
              AND x.id <> ALL(given)
              AND (coalesce(cardinality(queues), 0) = 0 OR x.queue = ANY(queues))
              AND (x.concurrency_key IS NULL OR x.concurrency_limit > (SELECT count(*) FROM latch_executions y
                 WHERE y.status = 'running' AND y.tenant = x.tenant AND y.concurrency_key = x.concurrency_key))
            ORDER BY x.priority DESC, x.run_at, x.id
            LIMIT lvl
            FOR UPDATE OF x SKIP LOCKED
        ), d AS MATERIALIZED (
            SELECT x.id, x.priority, x.run_at, x.tenant, x.concurrency_key, x.rate_key
            FROM latch_executions x
            WHERE x.tenant = t AND due AND x.status = 'scheduled' AND x.run_at <= latch_tenant_candidates.now
              AND x.id <> ALL(given)
              AND (coalesce(cardinality(queues), 0) = 0 OR x.queue = ANY(queues))
              AND (x.concurrency_key IS NULL OR x.concurrency_limit > (SELECT count(*) FROM latch_executions y
                 WHERE y.status = 'running' AND y.tenant = x.tenant AND y.concurrency_key = x.concurrency_key))
            ORDER BY x.priority DESC, x.run_at, x.id
            LIMIT lvl
            FOR UPDATE OF x SKIP LOCKED
        ),
        u AS (
            SELECT * FROM q UNION ALL SELECT * FROM d
            ORDER BY 2 DESC, 3, 1
            LIMIT lvl
        )
        SELECT u.id, u.priority, u.run_at, u.concurrency_key IS NOT NULL OR (u.rate_key IS NOT NULL AND EXISTS (
            SELECT 1 FROM latch_rate_limits r WHERE r.tenant = u.tenant AND r.rate_key = u.rate_key))
        FROM u;
    ELSE
        RETURN QUERY
        WITH q AS MATERIALIZED (
            SELECT x.* FROM (SELECT DISTINCT z AS kind FROM unnest(kinds) AS z) l CROSS JOIN LATERAL (
            SELECT x.id, x.priority, x.run_at, x.tenant, x.concurrency_key, x.rate_key
            FROM latch_executions x
            WHERE x.tenant = t AND x.status = 'queued' AND x.kind = l.kind
              AND x.id <> ALL(given)
              AND (coalesce(cardinality(queues), 0) = 0 OR x.queue = ANY(queues))
              AND (x.concurrency_key IS NULL OR x.concurrency_limit > (SELECT count(*) FROM latch_executions y
                 WHERE y.status = 'running' AND y.tenant = x.tenant AND y.concurrency_key = x.concurrency_key))
            ORDER BY x.priority DESC, x.run_at, x.id
            LIMIT lvl
            FOR UPDATE OF x SKIP LOCKED
            ) x
        ), d AS MATERIALIZED (
            SELECT x.* FROM (SELECT DISTINCT z AS kind FROM unnest(kinds) AS z) l CROSS JOIN LATERAL (
            SELECT x.id, x.priority, x.run_at, x.tenant, x.concurrency_key, x.rate_key
            FROM latch_executions x
            WHERE x.tenant = t AND due AND x.status = 'scheduled' AND x.run_at <= latch_tenant_candidates.now AND x.kind = l.kind
              AND x.id <> ALL(given)
              AND (coalesce(cardinality(queues), 0) = 0 OR x.queue = ANY(queues))
              AND (x.concurrency_key IS NULL OR x.concurrency_limit > (SELECT count(*) FROM latch_executions y
                 WHERE y.status = 'running' AND y.tenant = x.tenant AND y.concurrency_key = x.concurrency_key))
            ORDER BY x.priority DESC, x.run_at, x.id
            LIMIT lvl
            FOR UPDATE OF x SKIP LOCKED
            ) x
        ),
        u AS (
            SELECT * FROM q UNION ALL SELECT * FROM d
            ORDER BY 2 DESC, 3, 1
            LIMIT lvl
        )
        SELECT u.id, u.priority, u.run_at, u.concurrency_key IS NOT NULL OR (u.rate_key IS NOT NULL AND EXISTS (
            SELECT 1 FROM latch_rate_limits r WHERE r.tenant = u.tenant AND r.rate_key = u.rate_key))
        FROM u;
    END IF;
END
$$;

-- latch_claim_candidates as in version 5 (see there), each tenant's
-- candidates now read by latch_tenant_candidates, and sequential scans off
-- (as there: the skip through the tenants with work, planned on a small
-- table, read the whole table at each step once it was large). Cost: one index probe
-- per tenant with queued or scheduled work, and per tenant served, a walk
-- of its queue, or of each lane of the claim's kinds, up to the
-- candidates it gives, plus a range read of its due scheduled ones.
DROP FUNCTION latch_claim_candidates(timestamptz, bigint, text, text[], text[], boolean);
CREATE FUNCTION latch_claim_candidates(now timestamptz, n bigint, tenant text, queues text[], kinds text[],
    move boolean DEFAULT false)
RETURNS TABLE (id uuid, ord bigint, limited boolean)
LANGUAGE plpgsql VOLATILE
SET enable_bitmapscan = off
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    names text[];         -- the tenants with ready work, in turn order,
    turns bigint[];       --   their turns
    top bigint;           -- the greatest turn of any tenant
    served text[];        -- the tenants served, in the order last served
    ords bigint[] := '{}';  -- every candidate given: its ord,
    idxs int[] := '{}';     --   its tenant's place in names,
    limall boolean[] := '{}'; -- and whether it is limited (with move only)
    due text[];           -- the tenants with scheduled executions due by now
    total int;            -- how many tenants
    level int;            -- candidates a tenant gives in one pass, at most
    got bigint := 0;      -- candidates given
    gave int := 0;        -- tenants that gave at least one
    given uuid[] := '{}'; -- the candidates given
    cnt int[];            -- per tenant: candidates given
    open boolean[];       -- per tenant: its last read was cut by level
    ids uuid[];           -- one read's candidates, in order,
    lims boolean[];       --   and whether each is limited
    more boolean;
    i int;
    k int;
BEGIN
    -- Which tenants may be served at all is decided here, on latch_tenants.
    IF latch_claim_candidates.tenant <> '' THEN
        SELECT array_agg(t.name), array_agg(t.turn), (SELECT max(m.turn) FROM latch_tenants m)
        INTO names, turns, top
        FROM latch_tenants t WHERE t.name = latch_claim_candidates.tenant AND NOT t.disabled;
        SELECT array_agg(e.tenant) INTO due FROM (SELECT x.tenant FROM latch_executions x
            WHERE x.tenant = latch_claim_candidates.tenant AND x.status = 'scheduled'
              AND x.run_at <= latch_claim_candidates.now LIMIT 1) e;
    ELSE
        -- The tenants with queued executions, and those with scheduled
        -- ones due by now, greatest name first: each probe lands at the end
        -- of a tenant's part of an index, on its newest entries (the front
        -- holds those claims took, dead until vacuumed). A tenant costs a
        -- probe, one with scheduled executions one more for the due one.
        -- (Each probe's ORDER BY is its index's order, backwards: no other
        -- index of the table, latch_executions_tenant above all, which holds
        -- every finished execution too, can serve it without a sort.)
        WITH RECURSIVE q(name) AS (
            (SELECT e.tenant FROM latch_executions e WHERE e.status = 'queued'
             ORDER BY e.tenant DESC, e.priority, e.run_at DESC, e.id DESC LIMIT 1)
            UNION ALL
            SELECT (SELECT e.tenant FROM latch_executions e WHERE e.status = 'queued' AND e.tenant < q.name
                    ORDER BY e.tenant DESC, e.priority, e.run_at DESC, e.id DESC LIMIT 1)
            FROM q WHERE q.name IS NOT NULL
        ), s(name) AS (
            (SELECT e.tenant FROM latch_executions e WHERE e.status = 'scheduled'
             ORDER BY e.tenant DESC, e.run_at DESC LIMIT 1)
            UNION ALL
            SELECT (SELECT e.tenant FROM latch_executions e WHERE e.status = 'scheduled' AND e.tenant < s.name
                    ORDER BY e.tenant DESC, e.run_at DESC LIMIT 1)
            FROM s WHERE s.name IS NOT NULL
        ), d AS (
            -- One probe per tenant (LIMIT 1 in a lateral read), never a
            -- join that reads every due execution of every tenant.
            SELECT s.name FROM s CROSS JOIN LATERAL (
                SELECT 1 FROM latch_executions e WHERE e.status = 'scheduled' AND e.tenant = s.name
                AND e.run_at <= latch_claim_candidates.now LIMIT 1) x
            WHERE s.name IS NOT NULL
        )
        SELECT array_agg(t.name ORDER BY t.turn, t.name COLLATE "C"), array_agg(t.turn ORDER BY t.turn, t.name COLLATE "C"),
            (SELECT max(m.turn) FROM latch_tenants m), (SELECT array_agg(d.name) FROM d)
        INTO names, turns, top, due
        FROM latch_tenants t
        WHERE NOT t.disabled AND t.name IN (SELECT q.name FROM q WHERE q.name IS NOT NULL UNION SELECT d.name FROM d);
    END IF;
    total := coalesce(cardinality(names), 0);
    IF total = 0 OR n < 1 THEN
        RETURN;
    END IF;
    due := coalesce(due, '{}');
    -- One tenant, already last in turn (or no turns to move): one read,
    -- its candidates in its order (the common case, kept to one statement).
    IF total = 1 AND NOT names[1] = ANY(due) AND (NOT move OR (turns[1] > 0 AND turns[1] = top)) THEN
        RETURN QUERY
        SELECT c.cid, row_number() OVER (ORDER BY c.cpriority DESC, c.crun_at, c.cid) - 1, c.climited
        FROM latch_tenant_candidates(names[1], latch_claim_candidates.now, n::int, '{}', queues, kinds, false) c;
        RETURN;
    END IF;
    level := ceil(n::numeric / least(n, total))::int;
    cnt := array_fill(0, ARRAY[total]);
    open := array_fill(true, ARRAY[total]);
    LOOP
        more := false;
        FOR i IN 1 .. total LOOP
            CONTINUE WHEN NOT open[i];
            -- Not yet read, and n tenants gave already: nor are the rest.
            EXIT WHEN cnt[i] = 0 AND gave >= n;
            SELECT array_agg(c.cid ORDER BY c.cpriority DESC, c.crun_at, c.cid),
                array_agg(c.climited ORDER BY c.cpriority DESC, c.crun_at, c.cid)
            INTO ids, lims
            FROM latch_tenant_candidates(names[i], latch_claim_candidates.now, level, given, queues, kinds,
                names[i] = ANY(due)) c;
            k := coalesce(cardinality(ids), 0);
            IF k > 0 THEN
                RETURN QUERY SELECT g.id, (cnt[i] + g.o - 1) * total + (i - 1), g.lim
                    FROM unnest(ids, lims) WITH ORDINALITY AS g(id, lim, o);
                IF cnt[i] = 0 THEN
                    gave := gave + 1;
                END IF;
                given := given || ids;
                IF move THEN
                    ords := ords || ARRAY(SELECT (cnt[i] + g.o - 1) * total + (i - 1)
                        FROM generate_series(1, k) AS g(o));
                    idxs := idxs || array_fill(i, ARRAY[k]);
                    limall := limall || lims;
                END IF;
            END IF;
            cnt[i] := cnt[i] + k;
            got := got + k;
            open[i] := k = level;
            more := more OR open[i];
        END LOOP;
        EXIT WHEN got >= n OR NOT more;
    END LOOP;
    -- The caller leases the first n by ord, and nothing if any candidate
    -- is limited (claimTx then decides, and moves the turns itself).
    IF NOT move OR got = 0 OR true = ANY(limall) THEN
        RETURN;
    END IF;
    SELECT array_agg(names[g.i] ORDER BY g.last) INTO served
    FROM (SELECT z.i, max(z.o) AS last
          FROM (SELECT * FROM unnest(ords, idxs) AS z(o, i) ORDER BY z.o LIMIT n) z
          GROUP BY z.i) g;
    IF cardinality(served) = 1 AND turns[array_position(names, served[1])] > 0
            AND turns[array_position(names, served[1])] = top THEN
        RETURN;
    END IF;
    UPDATE latch_tenants t SET turn = (SELECT nextval('latch_turns')) * 1048576 + s.i
    FROM unnest(served) WITH ORDINALITY AS s(tenant, i)
    WHERE t.name = s.tenant AND t.name IN (SELECT l.name FROM latch_tenants l
        WHERE l.name = ANY(served) FOR NO KEY UPDATE OF l SKIP LOCKED);
END
$$;
