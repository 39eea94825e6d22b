-- Back to schema version 12: a claim excludes no tenant (0012's
-- latch_claim_candidates).
DROP FUNCTION latch_claim_candidates(timestamptz, bigint, text, text[], text[], boolean, text[]);
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
