-- latch schema version 10: the attempt history and the journal found by
-- their keys whatever the statistics say.
--
-- The store's connections plan each statement once (plan_cache_mode =
-- force_generic_plan) and keep that plan until an ANALYZE of its tables
-- invalidates it. A plan made while latch_runs (or the journal) is small,
-- or while statistics say so, may read the table whole: a sequential scan
-- is the cheapest way to read a one-page table. When the table has grown
-- the same plan reads all of it for every group of ends: a 50,000-job drain
-- ran at ~200 jobs/s. The statements that write these tables by execution
-- call these functions instead, whose settings leave no sequential scan to
-- choose: every plan then finds the rows by the primary key (the = ANY on
-- execution_id bounds any index scan to the ids given), when the plan is
-- made and whenever it is made again. Each function is one more command of
-- the statement that calls it, in its transaction, with its own snapshot:
-- the rows it writes were committed by earlier statements (a claim's runs,
-- a step's record), and the caller holds the execution's row.

-- The runs (ids[i], runs[i]) end at ats[i] with outcomes[i] and errors[i];
-- answers how many rows it updated.
CREATE FUNCTION latch_end_runs(ids uuid[], runs integer[], ats timestamptz[], outcomes text[], errors text[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    done bigint;
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN 0;
    END IF;
    UPDATE latch_runs r SET ended_at = v.at, outcome = v.outcome, error = v.error
    FROM unnest(ids, runs, ats, outcomes, errors) AS v(id, run, at, outcome, error)
    WHERE r.execution_id = ANY(ids) AND r.execution_id = v.id AND r.run = v.run;
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN done;
END
$$;

-- The runs (ids[i], runs[i]) go (a claim's runs that fell out of the
-- latest 100); answers how many.
CREATE FUNCTION latch_drop_runs(ids uuid[], runs integer[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    done bigint;
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN 0;
    END IF;
    DELETE FROM latch_runs r
    USING unnest(ids, runs) AS v(id, run)
    WHERE r.execution_id = ANY(ids) AND r.execution_id = v.id AND r.run = v.run;
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN done;
END
$$;

-- The journal, signals and runs of the executions ids go (their executions
-- are deleted by the caller); answers how many runs.
CREATE FUNCTION latch_delete_history(ids uuid[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    done bigint;
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN 0;
    END IF;
    DELETE FROM latch_steps WHERE execution_id = ANY(ids);
    DELETE FROM latch_signals WHERE execution_id = ANY(ids);
    DELETE FROM latch_runs WHERE execution_id = ANY(ids);
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN done;
END
$$;
