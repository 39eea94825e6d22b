package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/latch-run/latch/store"
)

const executionColumns = `id, tenant, kind, queue, priority, status, dedup_key, concurrency_key,
	concurrency_limit, rate_key, payload, result, error, attempt, max_attempts, timeout_seconds,
	schedule, created_at, run_at, started_at, finished_at, cancel_requested, worker_id, lease_expires_at,
	wake_at, waiting_for, suspend_step, trace_parent, dedup_hits, last_dedup_hit_at, stored_bytes,
	parent_id, parent_step, on_parent_end, depth`

type scanner interface{ Scan(dest ...any) error }

func scanExecution(row scanner) (*store.Execution, error) {
	var (
		e                                        store.Execution
		dedup, ckey, rkey, result, errMsg, sched sql.NullString
		worker, waitingFor, suspendStep, trace   sql.NullString
		parent, parentStep, onParentEnd          sql.NullString
		climit                                   sql.NullInt64
		status, payload                          string
		created, runAt                           int64
		started, finished, leaseExp, wakeAt      sql.NullInt64
		lastHit                                  sql.NullInt64
		cancelReq                                int
	)
	err := row.Scan(&e.ID, &e.Tenant, &e.Kind, &e.Queue, &e.Priority, &status, &dedup, &ckey,
		&climit, &rkey, &payload, &result, &errMsg, &e.Attempt, &e.MaxAttempts, &e.TimeoutSeconds,
		&sched, &created, &runAt, &started, &finished, &cancelReq, &worker, &leaseExp,
		&wakeAt, &waitingFor, &suspendStep, &trace, &e.DedupHits, &lastHit, &e.StoredBytes,
		&parent, &parentStep, &onParentEnd, &e.Depth)
	if err != nil {
		return nil, err
	}
	e.Status = store.Status(status)
	e.DedupKey, e.ConcurrencyKey, e.RateKey = dedup.String, ckey.String, rkey.String
	e.ConcurrencyLimit = int(climit.Int64)
	e.Payload = json.RawMessage(payload)
	if result.Valid {
		e.Result = json.RawMessage(result.String)
	}
	e.Error, e.Schedule, e.WorkerID = errMsg.String, sched.String, worker.String
	e.CreatedAt, e.RunAt = fromNS(created), fromNS(runAt)
	e.StartedAt, e.FinishedAt, e.LeaseExpiresAt = nullTime(started), nullTime(finished), nullTime(leaseExp)
	e.CancelRequested = cancelReq != 0
	e.WakeAt, e.WaitingFor, e.SuspendStep = nullTime(wakeAt), waitingFor.String, suspendStep.String
	e.TraceParent, e.LastDedupHitAt = trace.String, nullTime(lastHit)
	e.ParentID, e.ParentStep, e.OnParentEnd = parent.String, parentStep.String, store.ParentEnd(onParentEnd.String)
	return &e, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// getExecution reads one execution; tenant "" matches any tenant.
func getExecution(ctx context.Context, q querier, tenant, id string) (*store.Execution, error) {
	query := `SELECT ` + executionColumns + ` FROM executions WHERE id = ?`
	args := []any{id}
	if tenant != "" {
		query += ` AND tenant = ?`
		args = append(args, tenant)
	}
	return getOne(ctx, q, scanExecution, "execution "+id, "get execution", query, args...)
}

// getOne reads the one row of query with scan: ErrNotFound, saying what
// was looked for, when there is none.
func getOne[T any](ctx context.Context, q querier, scan func(scanner) (*T, error),
	what, op, query string, args ...any) (*T, error) {
	v, err := scan(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return v, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	return interpreted(getExecution(ctx, s.read, p.Tenant, p.ID))
}

// List implements store.Store. Filters that no index serves (listIndexed)
// are read through a window: the ids of the next Scan executions (of the
// tenant, through executions_tenant, or of every tenant, through the
// primary key), newest first from After, are counted first and the page is
// then read from that id range only, so a filter few executions match costs
// at most Scan index entries and rows however long the history.
func (s *Store) List(ctx context.Context, p *store.ListParams) (*store.ListResult, error) {
	limit, err := p.Paging()
	if err != nil {
		return nil, err
	}
	if p.ParentID != "" {
		return s.listChildren(ctx, p, limit)
	}
	var where []string
	var args []any
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if p.Tenant != "" {
		add("tenant = ?", p.Tenant)
	}
	if p.After != "" {
		add("id < ?", p.After)
	}
	if p.IDPrefix != "" {
		// A range of the primary key (or executions_tenant): the window
		// and the page examine only ids in it.
		lo, hi := store.IDPrefixRange(p.IDPrefix)
		add("id >= ?", lo)
		add("id <= ?", hi)
	}
	// The window's oldest id when List stops at it, "" when the window
	// reaches the oldest execution.
	windowEnd := ""
	if p.Filtered() && !listIndexed(p) {
		scan := p.ScanSize()
		var n int
		var oldest sql.NullString
		err := s.read.QueryRowContext(ctx, listWindowQuery(where), append(args, scan)...).Scan(&n, &oldest)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list: %w", interpretError(err))
		}
		if n == 0 {
			return &store.ListResult{}, nil
		}
		add("id >= ?", oldest.String)
		if n == scan {
			windowEnd = oldest.String
		}
	}
	if p.Status != "" {
		add("status = ?", string(p.Status))
	}
	if p.Kind != "" {
		add("kind = ?", p.Kind)
	}
	if p.Queue != "" {
		add("queue = ?", p.Queue)
	}
	if p.DedupKey != "" {
		add("dedup_key = ?", p.DedupKey)
	}
	if p.Schedule != "" {
		add("schedule = ?", p.Schedule)
	}
	query := listQuery(p, where)
	args = append(args, limit+1)
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", interpretError(err))
	}
	defer rows.Close()
	page := p.Page(limit)
	for rows.Next() {
		e, err := scanExecution(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list: %w", interpretError(err))
		}
		if page.Add(e) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", interpretError(err))
	}
	return page.Result(windowEnd), nil
}

// ListIndexed implements store.ListIndexer.
func (s *Store) ListIndexed(p *store.ListParams) bool { return listIndexed(p) }

// listIndexed reports whether List reads p through an index that holds
// only matches, or only the tenant's executions in flight (bounded by its
// max_inflight), and so needs no window: one tenant's executions of a
// dedup key (executions_tenant_dedup), of a schedule
// (executions_schedule_ticks, or executions_schedule with a status), or of
// a status in flight (liveIndexes).
//
// An index serves only when it answers every filter given: a dedup key
// alone, a schedule alone or with a status (executions_schedule is
// (tenant, schedule, status, id)); with any other filter the list goes
// through the window, so a schedule of a quarter of a million ticks is
// not walked in one request for a kind none of them has.
func listIndexed(p *store.ListParams) bool {
	switch {
	case p.Tenant == "":
		return false
	case p.DedupKey != "":
		return p.Status == "" && p.Kind == "" && p.Queue == "" && p.Schedule == ""
	case p.Schedule != "":
		return p.Kind == "" && p.Queue == ""
	}
	return liveList(p)
}

// liveList reports whether List reads p through liveIndexes.
func liveList(p *store.ListParams) bool {
	return p.Tenant != "" && p.Status.Inflight() && p.Kind == "" && p.DedupKey == "" && p.Schedule == ""
}

// listWindowQuery counts the executions of List's window and finds its
// oldest id: the next Scan ids (its last argument) under the conditions
// where (tenant and After only), newest first, read from an index alone.
func listWindowQuery(where []string) string {
	cond := ""
	if len(where) > 0 {
		cond = ` WHERE ` + strings.Join(where, " AND ")
	}
	return `SELECT count(*), min(id) FROM (SELECT id FROM executions` + cond + ` ORDER BY id DESC LIMIT ?)`
}

// listQuery is List's statement, newest first, its conditions where and
// its last argument the limit. A tenant's executions of a dedup key are
// read through executions_tenant_dedup, and those of a schedule through
// executions_schedule_ticks (migration 8), both already in id order. Those
// of a schedule and a status, or of a status in flight, through the index
// that holds them (executions_schedule, in id order per status;
// liveIndexes: at most the tenant's max_inflight rows), the ids of the
// page first, sorted, then their rows. Read in id order through executions_tenant instead, a
// page of a status few of the tenant's executions have would walk the
// tenant's whole history (a third of a second at 20,000 executions of the
// tenant among 1,000,000), and the planner, lacking statistics, chose that
// for a schedule. Other filters keep the plain plan, over List's window.
func listQuery(p *store.ListParams, where []string) string {
	cond := ""
	if len(where) > 0 {
		cond = ` WHERE ` + strings.Join(where, " AND ")
	}
	byIDs := func(ix, cond string) string {
		return `SELECT ` + executionColumns + ` FROM executions WHERE id IN (
			SELECT id FROM executions INDEXED BY ` + ix + cond + ` ORDER BY id DESC LIMIT ?)
			ORDER BY id DESC`
	}
	switch {
	case p.Tenant != "" && p.DedupKey != "":
		return `SELECT ` + executionColumns + ` FROM executions INDEXED BY executions_tenant_dedup` + cond +
			` ORDER BY id DESC LIMIT ?`
	case p.Tenant != "" && p.Schedule != "" && p.Status == "":
		return `SELECT ` + executionColumns + ` FROM executions INDEXED BY executions_schedule_ticks` + cond +
			` ORDER BY id DESC LIMIT ?`
	case p.Tenant != "" && p.Schedule != "":
		return byIDs("executions_schedule", cond)
	case liveList(p):
		ix := liveIndexes[0] // queued, scheduled
		switch p.Status {
		case store.StatusRunning:
			ix = liveIndexes[1]
		case store.StatusSuspended:
			ix = liveIndexes[2]
		}
		return byIDs(ix.name, cond+` AND `+ix.cond)
	}
	return `SELECT ` + executionColumns + ` FROM executions` + cond + ` ORDER BY id DESC LIMIT ?`
}
