package sqlite

import (
	"container/list"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// The store's connections keep their prepared statements. modernc's
// driver prepares (parses and plans) the text of every Exec and Query that
// is not run through a prepared *sql.Stmt, and that preparing was about
// half of the CPU a worker drain cost: the same few dozen statements,
// parsed again for every claim, complete and read. cachingDriver wraps the
// driver so that each connection prepares a statement text once and runs
// it again from then on; nothing else changes (the same SQL, the same
// transactions, the same errors).

// driverName is the database/sql name of the caching driver.
const driverName = "latch-sqlite"

func init() { sql.Register(driverName, cachingDriver{&sqlite.Driver{}}) }

// stmtCacheSize bounds the statements one connection keeps: the store's
// fixed statements fit many times over; texts built per call (a claim's
// filters, a list's) past it push out the least recently used.
const stmtCacheSize = 256

type cachingDriver struct{ d driver.Driver }

func (d cachingDriver) Open(name string) (driver.Conn, error) {
	c, err := d.d.Open(name)
	if err != nil {
		return nil, err
	}
	return newCachingConn(c)
}

// cachingConn is one connection with its statement cache. database/sql
// uses a connection from one goroutine at a time, so the cache needs no
// lock.
type cachingConn struct {
	conn interface {
		driver.Conn
		driver.ConnBeginTx
		driver.ConnPrepareContext
		driver.Pinger
		driver.SessionResetter
		driver.Validator
	}
	lru   *list.List // of *cachedStmt, most recently used first
	byKey map[string]*list.Element
}

// cachedStmt is one prepared statement; busy while rows read from it are
// open (a second query of the same text then prepares a statement of its
// own rather than reset the first one's rows).
type cachedStmt struct {
	query string
	stmt  driver.Stmt
	busy  bool
	gone  bool // evicted while busy: close it when its rows close
}

var errDriverConn = errors.New("sqlite: the driver's connection lacks a method the store needs")

func newCachingConn(c driver.Conn) (*cachingConn, error) {
	full, ok := c.(interface {
		driver.Conn
		driver.ConnBeginTx
		driver.ConnPrepareContext
		driver.Pinger
		driver.SessionResetter
		driver.Validator
	})
	if !ok {
		c.Close()
		return nil, errDriverConn
	}
	return &cachingConn{conn: full, lru: list.New(), byKey: map[string]*list.Element{}}, nil
}

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) {
	return c.conn.Prepare(query)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.conn.PrepareContext(ctx, query)
}

func (c *cachingConn) Begin() (driver.Tx, error) { //nolint:staticcheck // driver.Conn requires it
	return c.conn.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn.BeginTx(ctx, opts)
}

func (c *cachingConn) Ping(ctx context.Context) error { return c.conn.Ping(ctx) }

func (c *cachingConn) ResetSession(ctx context.Context) error { return c.conn.ResetSession(ctx) }

func (c *cachingConn) IsValid() bool { return c.conn.IsValid() }

// Close finalizes the cached statements, then closes the connection.
func (c *cachingConn) Close() error {
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*cachedStmt).stmt.Close()
	}
	c.lru.Init()
	clear(c.byKey)
	return c.conn.Close()
}

// take returns a statement for query, prepared on this connection, and the
// function that gives it back.
func (c *cachingConn) take(ctx context.Context, query string) (driver.Stmt, func(), error) {
	if e, ok := c.byKey[query]; ok {
		cs := e.Value.(*cachedStmt)
		if !cs.busy {
			c.lru.MoveToFront(e)
			cs.busy = true
			return cs.stmt, func() { c.giveBack(cs) }, nil
		}
		// In use by open rows: a statement of its own, closed after.
		st, err := c.conn.PrepareContext(ctx, query)
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	}
	st, err := c.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	cs := &cachedStmt{query: query, stmt: st, busy: true}
	c.byKey[query] = c.lru.PushFront(cs)
	for c.lru.Len() > stmtCacheSize {
		c.evict(c.lru.Back())
	}
	return st, func() { c.giveBack(cs) }, nil
}

func (c *cachingConn) evict(e *list.Element) {
	cs := c.lru.Remove(e).(*cachedStmt)
	delete(c.byKey, cs.query)
	if cs.busy {
		cs.gone = true
		return
	}
	cs.stmt.Close()
}

func (c *cachingConn) giveBack(cs *cachedStmt) {
	cs.busy = false
	if cs.gone {
		cs.stmt.Close()
	}
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st, done, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	defer done()
	return st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, done, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		done()
		return nil, err
	}
	return &givingRows{Rows: rows, done: done}, nil
}

// givingRows gives its statement back when closed.
type givingRows struct {
	driver.Rows
	done func()
}

func (r *givingRows) Close() error {
	err := r.Rows.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}
