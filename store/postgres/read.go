package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// executionColumns lists an execution's columns in the order scanExecution
// reads them; the alias placeholder {x} is replaced by columns().
const executionColumns = `{x}id::text, {x}tenant, {x}kind, {x}queue, {x}priority, {x}status,
	coalesce({x}dedup_key, ''), coalesce({x}concurrency_key, ''), coalesce({x}concurrency_limit, 0),
	coalesce({x}rate_key, ''), {x}payload, {x}result, coalesce({x}error, ''), {x}attempt,
	{x}max_attempts, {x}timeout_seconds, coalesce({x}schedule, ''), {x}created_at, {x}run_at,
	{x}started_at, {x}finished_at, {x}cancel_requested, coalesce({x}worker_id, ''), {x}lease_expires_at,
	{x}wake_at, coalesce({x}waiting_for, ''), coalesce({x}suspend_step, ''),
	coalesce({x}trace_parent, ''), {x}dedup_hits, {x}last_dedup_hit_at, {x}stored_bytes,
	coalesce({x}parent_id::text, ''), coalesce({x}parent_step, ''), coalesce({x}on_parent_end, ''), {x}depth`

// columns returns executionColumns qualified by alias ("" for none).
func columns(alias string) string {
	if alias != "" {
		alias += "."
	}
	return strings.ReplaceAll(executionColumns, "{x}", alias)
}

var (
	// executionColumnsPlain is executionColumns without an alias.
	executionColumnsPlain = columns("")

	sqlGetExecution       = `SELECT ` + executionColumnsPlain + ` FROM latch_executions WHERE id = $1`
	sqlGetTenantExecution = `SELECT ` + executionColumnsPlain + ` FROM latch_executions WHERE id = $1 AND tenant = $2`
)

func scanExecution(row pgx.Row) (*store.Execution, error) {
	var (
		e       store.Execution
		status  string
		payload string
		result  *string
		ends    string
	)
	err := row.Scan(&e.ID, &e.Tenant, &e.Kind, &e.Queue, &e.Priority, &status,
		&e.DedupKey, &e.ConcurrencyKey, &e.ConcurrencyLimit,
		&e.RateKey, &payload, &result, &e.Error, &e.Attempt,
		&e.MaxAttempts, &e.TimeoutSeconds, &e.Schedule, &e.CreatedAt, &e.RunAt,
		&e.StartedAt, &e.FinishedAt, &e.CancelRequested, &e.WorkerID, &e.LeaseExpiresAt,
		&e.WakeAt, &e.WaitingFor, &e.SuspendStep,
		&e.TraceParent, &e.DedupHits, &e.LastDedupHitAt, &e.StoredBytes,
		&e.ParentID, &e.ParentStep, &ends, &e.Depth)
	if err != nil {
		return nil, err
	}
	e.Status = store.Status(status)
	e.OnParentEnd = store.ParentEnd(ends)
	e.Payload = json.RawMessage(payload)
	if result != nil {
		e.Result = json.RawMessage(*result)
	}
	e.CreatedAt, e.RunAt = e.CreatedAt.UTC(), e.RunAt.UTC()
	e.StartedAt, e.FinishedAt, e.LeaseExpiresAt = utcPtr(e.StartedAt), utcPtr(e.FinishedAt), utcPtr(e.LeaseExpiresAt)
	e.WakeAt, e.LastDedupHitAt = utcPtr(e.WakeAt), utcPtr(e.LastDedupHitAt)
	return &e, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// querier is what reads need: a pool, a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// parseID parses an execution id. Ids are UUIDs; anything else names no
// execution.
func parseID(id string) (uuid.UUID, bool) {
	u, err := uuid.Parse(id)
	return u, err == nil && len(id) == 36
}

// getExecution reads one execution; tenant "" matches any tenant.
func getExecution(ctx context.Context, q querier, tenant, id string) (*store.Execution, error) {
	uid, ok := parseID(id)
	if !ok {
		return nil, fmt.Errorf("execution %q: %w", id, store.ErrNotFound)
	}
	var row pgx.Row
	if tenant == "" {
		row = q.QueryRow(ctx, sqlGetExecution, uid)
	} else {
		row = q.QueryRow(ctx, sqlGetTenantExecution, uid, tenant)
	}
	e, err := scanExecution(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("execution %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get execution: %w", interpretError(err))
	}
	return e, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	return getExecution(ctx, s.pool, p.Tenant, p.ID)
}

// List implements store.Store. Pages are keyed on the id (UUIDv7, so newest
// first is id descending) and stable under inserts. Filters that no index
// serves (listIndexed) are read through a window (listWindow): the ids of
// the next Scan executions, newest first from After, are counted first and
// the page is then read from that range of ids only, so a filter few
// executions match costs at most Scan index entries and rows however long
// the history.
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
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	// The window's oldest id when List stops at it, "" when the window
	// reaches the oldest execution.
	windowEnd := ""
	var win *listWindow
	if p.Filtered() && !listIndexed(p) {
		win = newListWindow(p)
		scan := p.ScanSize()
		var n int
		var oldest *string
		err := s.pool.QueryRow(ctx, win.countQuery(), append(win.args(uuid.Nil), scan)...).Scan(&n, &oldest)
		if err != nil {
			return nil, fmt.Errorf("postgres: list: %w", interpretError(err))
		}
		if n == 0 || oldest == nil {
			return &store.ListResult{}, nil
		}
		lo, _ := parseID(*oldest)
		args = win.args(lo)
		if n == scan {
			windowEnd = *oldest
		}
	} else if p.Tenant != "" && !p.Filtered() {
		// A tenant's executions, unfiltered: bounded like a window, for the
		// same reason (listWindow), from After to the oldest.
		win = newListWindow(p)
		args = win.args(uuid.Nil)
	} else {
		if p.Tenant != "" {
			add("tenant = $%d", p.Tenant)
		}
		if p.After != "" {
			after, _ := parseID(p.After) // Paging checked it
			add("id < $%d", after)
		}
	}
	if p.IDPrefix != "" {
		// The window (newListWindow) is bounded to the prefix's range
		// too, so its count examines only ids in it.
		lo, hi := idPrefixRange(p.IDPrefix)
		add("id >= $%d", lo)
		add("id <= $%d", hi)
	}
	addColumnFilters(add, p)
	args = append(args, limit+1)
	query := listQuery(where, len(args))
	if win != nil {
		query = win.pageQuery(where, len(args))
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", interpretError(err))
	}
	defer rows.Close()
	page := p.Page(limit)
	for rows.Next() {
		e, err := scanExecution(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list: %w", interpretError(err))
		}
		if page.Add(e) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list: %w", interpretError(err))
	}
	return page.Result(windowEnd), nil
}

// ListIndexed implements store.ListIndexer.
func (s *Store) ListIndexed(p *store.ListParams) bool { return listIndexed(p) }

// listIndexed reports whether List reads p through an index that holds
// only matches, and so needs no window: one tenant's executions of a dedup
// key (latch_executions_tenant_dedup) or of a schedule
// (latch_executions_schedule_ticks, migration 9, in id order), or one
// parent's children (latch_executions_children, bounded by
// store.MaxChildren whatever the other filters).
//
// An index serves only when it answers every filter given (the key or the
// schedule alone): with another filter the list goes through the window,
// so a schedule of a quarter of a million ticks is not walked in one
// request for a status few of them have.
func listIndexed(p *store.ListParams) bool {
	if p.ParentID != "" {
		return true // one parent's children, at most store.MaxChildren (listChildren)
	}
	others := p.Status == "" && p.Kind == "" && p.Queue == ""
	return p.Tenant != "" && others && (p.DedupKey != "") != (p.Schedule != "")
}

// listQuery is List's statement under the conditions where, newest first,
// its argument $limit the page's size plus one.
//
// ORDER BY names the table's id: a bare id is the output column id::text,
// whose order no index has, so every page would sort every row the filters
// let through (seconds for an unfiltered page of a million executions,
// TestObserveScale1M) instead of walking the primary key (or
// latch_executions_tenant) from the newest id and stopping after the page.
func listQuery(where []string, limit int) string {
	query := `SELECT ` + executionColumnsPlain + ` FROM latch_executions`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	return query + fmt.Sprintf(` ORDER BY latch_executions.id DESC LIMIT $%d`, limit)
}

// listWindow is List's window: the executions of the tenant (or of every
// tenant) with ids in [lo, hi), hi being After (or above every id) and lo
// the window's oldest id once counted (below every id before). A tenant's
// window is bounded on (tenant, id) row values, not with tenant = $1 and
// ranges of id: the statements are planned once for every tenant (generic
// plans, postgres.go), and with tenant = $1 the plan for "the newest ids of
// a tenant below After" walks the primary key backwards filtering on the
// tenant, which reads the rows of every tenant in between: half a million
// rows for a tenant of 20,000 among 1,000,000 (TestObserveScale1M). Row
// bounds and ORDER BY tenant, id leave latch_executions_tenant the only
// index to walk.
type listWindow struct {
	tenant string
	hi     uuid.UUID
	floor  uuid.UUID // the lowest id of ListParams.IDPrefix's range, else uuid.Nil
}

// idPrefixRange is store.IDPrefixRange as uuids (Paging checked prefix).
func idPrefixRange(prefix string) (lo, hi uuid.UUID) {
	l, h := store.IDPrefixRange(prefix)
	lo, _ = parseID(l)
	hi, _ = parseID(h)
	return lo, hi
}

// maxID is above every execution id (a UUIDv7 has version 7).
var maxID = uuid.UUID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func newListWindow(p *store.ListParams) *listWindow {
	w := &listWindow{tenant: p.Tenant, hi: maxID}
	if p.After != "" {
		w.hi, _ = parseID(p.After) // Paging checked it
	}
	if p.IDPrefix != "" {
		// [lo, hi] of the prefix is [lo, hi+1): hi+1 is hi's successor,
		// maxID when hi is all f (no UUIDv7 is).
		lo, hi := idPrefixRange(p.IDPrefix)
		w.floor = lo
		if next, ok := successor(hi); ok && bytes.Compare(next[:], w.hi[:]) < 0 {
			w.hi = next
		}
	}
	return w
}

// successor is the uuid right after id, false when id is the highest.
func successor(id uuid.UUID) (uuid.UUID, bool) {
	for i := len(id) - 1; i >= 0; i-- {
		id[i]++
		if id[i] != 0 {
			return id, true
		}
	}
	return id, false
}

// args are the window's arguments with lo as its oldest id: $1, $2 (and
// $3 for a tenant).
func (w *listWindow) args(lo uuid.UUID) []any {
	if bytes.Compare(lo[:], w.floor[:]) < 0 {
		lo = w.floor
	}
	if w.tenant == "" {
		return []any{w.hi, lo}
	}
	return []any{w.tenant, w.hi, lo}
}

// cond is the window's condition on its args.
func (w *listWindow) cond() string {
	if w.tenant == "" {
		return `id < $1 AND id >= $2`
	}
	return `(tenant, id) < ($1, $2) AND (tenant, id) >= ($1, $3)`
}

// order is the window's order, newest first, on the columns of alias
// ("" for none).
func (w *listWindow) order(alias string) string {
	if alias != "" {
		alias += "."
	}
	if w.tenant == "" {
		return alias + `id DESC`
	}
	return alias + `tenant DESC, ` + alias + `id DESC`
}

// countQuery counts the executions of the window, at most its next
// argument, and finds the oldest of them, from an index alone. (uuid has
// no min; the canonical text of a uuid, byte by byte, sorts as the uuid
// does.)
func (w *listWindow) countQuery() string {
	return fmt.Sprintf(`SELECT count(*), min(id::text COLLATE "C") FROM (SELECT id FROM latch_executions
		WHERE %s ORDER BY %s LIMIT $%d) w`, w.cond(), w.order(""), len(w.args(uuid.Nil))+1)
}

// pageQuery reads the page in the window, filtered by where, newest first,
// until the page ($limit, its size plus one) is full. ORDER BY names the
// table's columns, as listQuery's does.
func (w *listWindow) pageQuery(where []string, limit int) string {
	cond := w.cond()
	if len(where) > 0 {
		cond += ` AND ` + strings.Join(where, " AND ")
	}
	return `SELECT ` + executionColumnsPlain + ` FROM latch_executions WHERE ` + cond +
		` ORDER BY ` + w.order("latch_executions") + fmt.Sprintf(` LIMIT $%d`, limit)
}

// listChildren is List by ParentID: the children of one execution in spawn
// order (child_ord, latch_executions_children), with the other filters;
// After is a child of that parent, the page going on after its place.
func (s *Store) listChildren(ctx context.Context, p *store.ListParams, limit int) (*store.ListResult, error) {
	parent, ok := parseID(p.ParentID)
	if !ok {
		return &store.ListResult{}, nil
	}
	args := []any{parent}
	where := []string{"parent_id = $1"}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if p.Tenant != "" {
		add("tenant = $%d", p.Tenant)
	}
	if p.After != "" {
		after, _ := parseID(p.After) // Paging checked it
		add("child_ord > (SELECT a.child_ord FROM latch_executions a WHERE a.id = $%d AND a.parent_id = $1)", after)
	}
	addColumnFilters(add, p)
	args = append(args, limit+1)
	query := `SELECT ` + executionColumnsPlain + ` FROM latch_executions WHERE ` + strings.Join(where, " AND ") +
		fmt.Sprintf(` ORDER BY latch_executions.child_ord LIMIT $%d`, len(args))
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", interpretError(err))
	}
	defer rows.Close()
	page := p.Page(limit)
	for rows.Next() {
		e, err := scanExecution(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list: %w", interpretError(err))
		}
		if page.Add(e) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list: %w", interpretError(err))
	}
	return page.Result(""), nil
}

// addColumnFilters adds the list filters that compare one column each
// (status, kind, queue, dedup key, schedule), as List and the children's
// list both apply them.
func addColumnFilters(add func(cond string, v any), p *store.ListParams) {
	if p.Status != "" {
		add("status = $%d", string(p.Status))
	}
	if p.Kind != "" {
		add("kind = $%d", p.Kind)
	}
	if p.Queue != "" {
		add("queue = $%d", p.Queue)
	}
	if p.DedupKey != "" {
		add("dedup_key = $%d", p.DedupKey)
	}
	if p.Schedule != "" {
		add("schedule = $%d", p.Schedule)
	}
}
