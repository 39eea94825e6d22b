-- latch schema version 5: claims take turns across tenants (I12).
--
-- latch_tenants.turn orders the tenants a claim serves: smallest turn
-- first, ties by name. A claim gives each tenant it served a turn past
-- every other's, from latch_turns (latch_claim_candidates below, and
-- claim.go's sqlTurns). The column is not indexed, so that those updates
-- stay HOT; the room on the page is for them.
ALTER TABLE latch_tenants ADD COLUMN turn bigint NOT NULL DEFAULT 0;
ALTER TABLE latch_tenants SET (fillfactor = 50);
CREATE SEQUENCE latch_turns;

-- The queue, per tenant, replaces the queue across tenants of version 1:
-- queued executions in their tenant's claim order, and scheduled ones by
-- tenant and run_at, so that a tenant's due ones are a range however many
-- wait for later.
CREATE INDEX latch_executions_queued ON latch_executions (tenant, priority DESC, run_at, id)
    WHERE status = 'queued';
CREATE INDEX latch_executions_scheduled ON latch_executions (tenant, run_at)
    WHERE status = 'scheduled';
DROP INDEX latch_executions_ready;

-- latch_claim_candidates locks (FOR UPDATE SKIP LOCKED) and returns up to
-- about n ready executions with their place in fair claim order (ord,
-- ascending): tenants take turns (I12), one execution each a round, the
-- tenants in turn order; each tenant's in its own claim order (priority
-- DESC, run_at, id). Those whose concurrency key is at its limit are left
-- out; limited says the execution has a limit the claim must decide under
-- its lock (a concurrency key, or a rate key its tenant has a limit for).
-- tenant '' and NULL or empty queues or kinds filter nothing. The ready
-- conditions and the room test are those of claim.go (sqlReady, sqlRoom).
--
-- How: the tenants with queued executions, or with scheduled ones due by
-- now, are found by skipping through latch_executions_queued and
-- latch_executions_scheduled one tenant at a time (greatest name first),
-- and put in turn order.
-- Then each tenant in turn, in passes, gives up to level candidates
-- (level = n shared out over the tenants), besides those it gave;
-- the first pass stops taking new tenants once n of them gave one, and the
-- passes end once n candidates are out or no tenant may give more. ord is
-- (the candidate's rank in its tenant) * (tenants) + (its tenant's place
-- in turn order), so that the first n by ord are exactly the first n of
-- the rounds; a few more (at most one per tenant) may come out, locked,
-- for the caller to leave.
--
-- With move, for a caller that leases the first n by ord unless one of
-- them is limited (sqlClaimMany), it also gives the tenants of those n new
-- turns, in the order they were last served: past every turn given before,
-- from the sequence latch_turns, one value per call, times 2^20 (room for
-- that many tenants) plus the order. A tenant row another transaction holds
-- is skipped (FOR NO KEY UPDATE SKIP LOCKED): that is a concurrent claim
-- serving the tenant and moving its turn just as far, so no claim waits for
-- another on a tenant row. A claim that serves one tenant only, whose turn
-- is already past every other's (turns given are never equal; only the
-- first, 0, is shared), moves nothing: one busy tenant costs no write.
--
-- Cost: one index probe per tenant with queued or
-- scheduled work, and per tenant served, a walk of its own queue index up
-- to the candidates it gives plus a range read of its due scheduled ones.
--
-- It is a function for its planner settings too. Each read is an ordered
-- walk of a tenant's index that stops after level rows; but the planner
-- multiplies the selectivities of the conditions (status, room, kinds),
-- which it cannot know without fresh statistics, and when it expects only
-- a few ready rows it picks a bitmap scan and a sort instead. Without
-- bitmap scans the ordered index walk is the cheapest plan whatever the
-- statistics say. JIT is off as well: statistics that promise a large
-- result raise the plan's estimated cost past jit_above_cost, and compiling
-- its expressions then costs each claim tens of milliseconds.
DROP FUNCTION latch_claim_candidates(timestamptz, bigint, text, text[], text[]);
CREATE FUNCTION latch_claim_candidates(now timestamptz, n bigint, tenant text, queues text[], kinds text[],
    move boolean DEFAULT false)
RETURNS TABLE (id uuid, ord bigint, limited boolean)
LANGUAGE plpgsql VOLATILE
SET enable_bitmapscan = off
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
            SELECT s.name FROM s WHERE s.name IS NOT NULL AND EXISTS (
                SELECT 1 FROM latch_executions e WHERE e.status = 'scheduled' AND e.tenant = s.name
                AND e.run_at <= latch_claim_candidates.now)
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
        SELECT u.id, row_number() OVER (ORDER BY u.priority DESC, u.run_at, u.id) - 1,
            u.concurrency_key IS NOT NULL OR (u.rate_key IS NOT NULL AND EXISTS (
                SELECT 1 FROM latch_rate_limits l WHERE l.tenant = u.tenant AND l.rate_key = u.rate_key))
        FROM (
            SELECT x.id, x.priority, x.run_at, x.tenant, x.concurrency_key, x.rate_key
            FROM latch_executions x
            WHERE x.tenant = names[1] AND x.status = 'queued'
              AND (coalesce(cardinality(queues), 0) = 0 OR x.queue = ANY(queues))
              AND (coalesce(cardinality(kinds), 0) = 0 OR x.kind = ANY(kinds))
              AND (x.concurrency_key IS NULL OR x.concurrency_limit > (SELECT count(*) FROM latch_executions y
                   WHERE y.status = 'running' AND y.tenant = x.tenant AND y.concurrency_key = x.concurrency_key))
            ORDER BY x.priority DESC, x.run_at, x.id
            LIMIT n
            FOR UPDATE OF x SKIP LOCKED
        ) u;
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
            IF names[i] = ANY(due) THEN
                WITH q AS MATERIALIZED (
                    SELECT x.id, x.priority, x.run_at, x.tenant, x.concurrency_key, x.rate_key
                    FROM latch_executions x
                    WHERE x.tenant = names[i] AND x.status = 'queued' AND x.id <> ALL(given)
                  AND (coalesce(cardinality(queues), 0) = 0 OR x.queue = ANY(queues))
                      AND (coalesce(cardinality(kinds), 0) = 0 OR x.kind = ANY(kinds))
                      AND (x.concurrency_key IS NULL OR x.concurrency_limit > (SELECT count(*) FROM latch_executions y
                           WHERE y.status = 'running' AND y.tenant = x.tenant AND y.concurrency_key = x.concurrency_key))
                    ORDER BY x.priority DESC, x.run_at, x.id
                    LIMIT level
                    FOR UPDATE OF x SKIP LOCKED
                ), d AS MATERIALIZED (
                    SELECT x.id, x.priority, x.run_at, x.tenant, x.concurrency_key, x.rate_key
                    FROM latch_executions x
                    WHERE x.tenant = names[i] AND x.status = 'scheduled' AND x.run_at <= latch_claim_candidates.now
                      AND x.id <> ALL(given)
                  AND (coalesce(cardinality(queues), 0) = 0 OR x.queue = ANY(queues))
                      AND (coalesce(cardinality(kinds), 0) = 0 OR x.kind = ANY(kinds))
                      AND (x.concurrency_key IS NULL OR x.concurrency_limit > (SELECT count(*) FROM latch_executions y
                           WHERE y.status = 'running' AND y.tenant = x.tenant AND y.concurrency_key = x.concurrency_key))
                    ORDER BY x.priority DESC, x.run_at, x.id
                    LIMIT level
                    FOR UPDATE OF x SKIP LOCKED
                ), u AS (
                    SELECT * FROM q UNION ALL SELECT * FROM d
                    ORDER BY priority DESC, run_at, id
                    LIMIT level
                )
                SELECT array_agg(u.id ORDER BY u.priority DESC, u.run_at, u.id),
                    array_agg(u.concurrency_key IS NOT NULL OR (u.rate_key IS NOT NULL AND EXISTS (
                    SELECT 1 FROM latch_rate_limits l WHERE l.tenant = u.tenant AND l.rate_key = u.rate_key))
                        ORDER BY u.priority DESC, u.run_at, u.id)
                INTO ids, lims
                FROM u;
            ELSE
                SELECT array_agg(u.id ORDER BY u.priority DESC, u.run_at, u.id),
                    array_agg(u.concurrency_key IS NOT NULL OR (u.rate_key IS NOT NULL AND EXISTS (
                    SELECT 1 FROM latch_rate_limits l WHERE l.tenant = u.tenant AND l.rate_key = u.rate_key))
                        ORDER BY u.priority DESC, u.run_at, u.id)
                INTO ids, lims
                FROM (
                    SELECT x.id, x.priority, x.run_at, x.tenant, x.concurrency_key, x.rate_key
                    FROM latch_executions x
                    WHERE x.tenant = names[i] AND x.status = 'queued' AND x.id <> ALL(given)
                  AND (coalesce(cardinality(queues), 0) = 0 OR x.queue = ANY(queues))
                      AND (coalesce(cardinality(kinds), 0) = 0 OR x.kind = ANY(kinds))
                      AND (x.concurrency_key IS NULL OR x.concurrency_limit > (SELECT count(*) FROM latch_executions y
                           WHERE y.status = 'running' AND y.tenant = x.tenant AND y.concurrency_key = x.concurrency_key))
                    ORDER BY x.priority DESC, x.run_at, x.id
                    LIMIT level
                    FOR UPDATE OF x SKIP LOCKED
                ) u;
            END IF;
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
