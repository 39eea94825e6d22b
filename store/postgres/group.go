package postgres

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/internal/batch"
)

// Group commit.
//
// The hot operations — a one-item Admit, Claim, Heartbeat, Complete, Fail,
// Release — are written as set-based statements over arrays: one statement
// decides any number of operations of its kind, each exactly as if it ran
// alone (sql_group.go). Operations that arrive while a group is at the
// server wait in a queue; when it is done, the next sender takes everything
// queued (up to groupMax), builds one statement per kind present and sends
// them as one pipelined batch: one round trip, one implicit transaction, one
// commit and one WAL flush for the group, and one executor run per kind
// instead of one per operation. Operations of a group are independent of
// each other (their callers ran them concurrently, so any order is a valid
// one); two of them on one execution are decided one after the other by
// the row lock.
//
// A grouper has one group at the server at a time. With synchronous
// commits the WAL flush is what a write costs most, and flushes are taken
// one after the other, so throughput is the number of operations each
// flush carries: letting groups of submits overlap made them smaller and
// the store slower. Claims have a grouper of their own (Store.claims):
// a claim's statement costs more than its flush (it walks the queue), and
// workers claim for the slots their last handlers freed while the writes
// recording those handlers' outcomes are on their way; in one lane each
// would wait for the other. A group never waits to fill up: an operation that finds no
// group at the server goes at once, alone, so grouping adds no latency when
// the store is quiet.
//
// If a statement of a group fails (latch_abort, a deadlock), PostgreSQL
// rolls the whole group back: nothing of it happened, and each operation is
// run again by its caller, alone, on the ordinary path.
//
// The queue, the senders and what a caller whose context ends gets are
// package batch's; this file keeps what a group sends (exec).
const (
	// groupSenders: while one sender's group is at the server, another
	// collects the next; the first then hands out its results.
	groupSenders = 2
	groupMax     = 256 // operations per group at most
)

// errRegroup tells the caller that its group was rolled back through no
// fault of its own or never sent: run the operation again alone.
var errRegroup = errors.New("postgres: group rolled back")

// opKind names a set-based statement (sql_group.go).
type opKind int

const (
	kindAdmit opKind = iota
	kindClaim
	kindHeartbeat
	kindComplete
	kindFail
	kindRelease
	numKinds
)

// groupOp is an operation that can share a statement with others of its kind.
type groupOp interface {
	kind() opKind
}

type grouper struct {
	pool *pgxpool.Pool
	b    *batch.Batcher[groupOp, struct{}]

	// ride, if set, gives a group operations to send after its own (the
	// parked claims a group with an admission takes: ride.go) and the
	// function that answers them with the group's outcome.
	ride func(ops []groupOp) ([]groupOp, func(error))
}

// startGrouper starts a grouper: one group at the server at a time, the
// next forming from everything that arrives meanwhile (batch.Config.Serial,
// released once the group's results are in). ride may be nil.
func startGrouper(pool *pgxpool.Pool, ride func([]groupOp) ([]groupOp, func(error))) *grouper {
	g := &grouper{pool: pool, ride: ride}
	g.b = batch.New(batch.Config[groupOp, struct{}]{Max: groupMax, Lanes: groupSenders,
		Serial: true, Timeout: opTimeout,
		Exec: func(ctx context.Context, grp *batch.Group[groupOp, struct{}]) {
			grp.Fail(g.exec(ctx, grp.Items, grp.Release))
		}})
	return g
}

// close lets the group at the server, if any, finish and be answered.
// What is still queued was never sent: its callers run it alone (and fail:
// the pool is closed next).
func (g *grouper) close() { g.b.Close() }

// do runs op in a group. A caller whose ctx ends before op is taken into
// a group gets ctx's error and op never runs; once taken, op runs to its
// end (package batch). errRegroup: run op alone.
func (g *grouper) do(ctx context.Context, op groupOp) error {
	_, err := g.b.Do(ctx, op)
	if errors.Is(err, batch.ErrClosed) {
		return errRegroup
	}
	return err
}

// exec sends a group and reads every statement's results; release lets
// the next group go once they are in (after the commit: the server sends a
// pipeline's results at its Sync). nil means the group committed. A failed
// statement rolls the whole group back and is answered errRegroup; an
// error of the connection itself is ambiguous (the commit may or may not
// have happened) and is answered as it is, as it would be to an operation
// sent alone.
func (g *grouper) exec(ctx context.Context, ops []groupOp, release func()) (err error) {
	defer release()
	if g.ride != nil {
		if extra, answer := g.ride(ops); answer != nil {
			ops = append(slices.Clip(ops), extra...)
			defer func() { answer(err) }()
		}
	}
	c, err := g.pool.Acquire(ctx)
	if err != nil {
		return errRegroup // nothing was sent
	}
	defer c.Release()
	stmts := statements(ops)
	b := &pgx.Batch{}
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	br := c.SendBatch(ctx, b)
	var stmtErr error
	for _, st := range stmts {
		rows, err := br.Query()
		if err == nil {
			err = st.read(rows)
		}
		if err != nil {
			stmtErr = err
			break
		}
	}
	release() // the results are in: the next group may go
	closeErr := br.Close()
	switch err := errors.Join(stmtErr, closeErr); {
	case err == nil:
		for _, st := range stmts {
			if st.settle != nil {
				st.settle(ctx, c)
			}
		}
		return nil
	case isServerError(err):
		return errRegroup // the server rolled the group back
	default:
		return err
	}
}

// statement is one set-based statement for some operations of one kind;
// read decodes its rows into the operations (and closes them). settle, if
// set, runs after the commit on the same connection: reads that complete
// the answers (what a taken dedup key maps to). A failed settle is not the
// statement's failure: the operations it could not answer read for
// themselves.
type statement struct {
	sql    string
	args   []any
	read   func(pgx.Rows) error
	settle func(ctx context.Context, q querier)
}

// statements builds one statement per kind present in ops (per kind and
// filters, for claims), in kind order.
func statements(ops []groupOp) []statement {
	type bucket struct {
		kind opKind
		sig  string
		ops  []groupOp
	}
	var buckets []*bucket
	find := map[[2]any]*bucket{}
	for _, op := range ops {
		sig := ""
		if s, ok := op.(interface{ signature() string }); ok {
			sig = s.signature()
		}
		b := find[[2]any{op.kind(), sig}]
		if b == nil {
			b = &bucket{kind: op.kind(), sig: sig}
			find[[2]any{op.kind(), sig}] = b
			buckets = append(buckets, b)
		}
		b.ops = append(b.ops, op)
	}
	slices.SortStableFunc(buckets, func(a, b *bucket) int { return int(a.kind) - int(b.kind) })
	out := make([]statement, len(buckets))
	for i, b := range buckets {
		out[i] = build(b.kind, b.ops, true)
	}
	return out
}

// isServerError reports an error the server sent: the statement failed and
// the transaction was rolled back, with the connection still fine.
func isServerError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// run runs op in a group (claims in their own lane), or alone when its
// group was rolled back or left it unanswered (a Heartbeat whose row
// another transaction held: the group passed it rather than wait).
func (s *Store) run(ctx context.Context, op groupOp) error {
	g := s.group
	if op.kind() == kindClaim {
		g = s.claims
	}
	err := g.do(ctx, op)
	if u, ok := op.(interface{ unanswered() bool }); ok && err == nil && u.unanswered() {
		err = errRegroup
	}
	if !errors.Is(err, errRegroup) {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		st := build(op.kind(), []groupOp{op}, false)
		rows, err := c.Query(ctx, st.sql, st.args...)
		if err == nil {
			err = st.read(rows)
		}
		if err == nil && st.settle != nil {
			st.settle(ctx, c)
		}
		return err
	})
}
