package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Rate limit statements. A limit is one row of latch_rate_limits; its tat
// (the GCRA's theoretical arrival time, NULL = never used) moves only inside
// Claim, in the transaction that starts the executions it admits.
const (
	rateLimitColumns = `tenant, rate_key, rate, per, burst, tat, created_at, updated_at`

	// A replace keeps the bucket (tat) and created_at. The foreign key
	// refuses an unknown tenant.
	sqlPutRateLimit = `
INSERT INTO latch_rate_limits (tenant, rate_key, rate, per, burst, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $6)
ON CONFLICT (tenant, rate_key) DO UPDATE SET rate = excluded.rate, per = excluded.per,
    burst = excluded.burst, updated_at = excluded.updated_at
RETURNING ` + rateLimitColumns

	sqlGetRateLimit = `SELECT ` + rateLimitColumns + ` FROM latch_rate_limits WHERE tenant = $1 AND rate_key = $2`

	sqlDeleteRateLimit = `DELETE FROM latch_rate_limits WHERE tenant = $1 AND rate_key = $2`

	// Every limit, or a tenant's ({tenant}); ordered by the caller.
	sqlListRateLimits = `SELECT ` + rateLimitColumns + ` FROM latch_rate_limits WHERE true{tenant}`

	// The buckets of a claim's candidates, locked in (tenant, rate_key)
	// order: the lock is taken on each row as the sorted rows come out, so
	// claimers that share buckets wait for each other in one order. FOR
	// UPDATE returns each row's newest version (its TAT as the last claim
	// that held it left it). $1 and $2 are the tenants and keys, pairwise.
	sqlLockBuckets = `SELECT ` + rateLimitColumns + ` FROM latch_rate_limits
WHERE (tenant, rate_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
ORDER BY tenant, rate_key FOR UPDATE`

	// The TATs a claim moved; the rows are locked by it.
	sqlWriteBuckets = `
UPDATE latch_rate_limits l SET tat = u.tat
FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS u(tenant, rate_key, tat)
WHERE l.tenant = u.tenant AND l.rate_key = u.rate_key`

	// Defer the ready executions of the buckets that refused a start
	// ($1 now; $2 tenants, $3 keys, $4 their next free start, $5 their
	// emission interval in nanoseconds, $6 how many of each this claim
	// deferred before; {filters}, the claim's, numbered from $7): each
	// becomes scheduled at free_at + (k-1)·interval for the k-th in claim
	// order, rounded up to the microsecond, so that the backlog comes back
	// one start at a time instead of being passed over by every claim. Those
	// another transaction holds are passed by (SKIP LOCKED; this claim's own
	// candidates are its own), and so are those whose concurrency key has no
	// room: the key is checked first, and they are not the bucket's to defer.
	sqlDeferRated = `
WITH b AS (
    SELECT * FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::bigint[], $6::int[])
    AS b(tenant, rate_key, free_at, iv, k0)
), c AS (
    SELECT e.id, e.tenant, e.rate_key, e.priority, e.run_at
    FROM latch_executions e
    WHERE ` + sqlReady + ` AND (e.tenant, e.rate_key) IN (SELECT tenant, rate_key FROM b)
      AND ` + sqlRoom + `
      {filters}
    FOR UPDATE OF e SKIP LOCKED
), d AS (
    SELECT c.id, b.free_at + ceil((b.k0 + row_number() OVER w - 1)::float8 * b.iv / 1000)
        * interval '1 microsecond' AS run_at
    FROM c JOIN b ON b.tenant = c.tenant AND b.rate_key = c.rate_key
    WINDOW w AS (PARTITION BY c.tenant, c.rate_key ORDER BY c.priority DESC, c.run_at, c.id)
)
UPDATE latch_executions x SET status = 'scheduled', run_at = d.run_at
FROM d WHERE x.id = d.id
RETURNING x.tenant, x.rate_key, x.run_at`
)

// PutRateLimit implements store.Store: one statement.
func (s *Store) PutRateLimit(ctx context.Context, p *store.PutRateLimitParams) (*store.RateLimit, error) {
	l := p.Limit
	if err := l.Validate(); err != nil {
		return nil, err
	}
	var out *store.RateLimit
	err := s.putRecord(ctx, "rate limit", l.Tenant, func(row pgx.Row) (err error) {
		out, err = scanRateLimit(row)
		return err
	}, sqlPutRateLimit, l.Tenant, l.Key, l.Rate, int64(l.Per), l.Burst, now(p.Now))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetRateLimit implements store.Store.
func (s *Store) GetRateLimit(ctx context.Context, p *store.GetRateLimitParams) (*store.RateLimit, error) {
	return getRecord(ctx, s.pool, scanRateLimit, "rate limit", p.Key, sqlGetRateLimit, p.Tenant, p.Key)
}

// ListRateLimits implements store.Store: one statement, ordered by tenant
// then key in byte order (not the database's collation).
func (s *Store) ListRateLimits(ctx context.Context, p *store.ListRateLimitsParams) ([]*store.RateLimit, error) {
	sql, args := withTenant(sqlListRateLimits, p.Tenant, nil)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list rate limits: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.RateLimit
	for rows.Next() {
		l, err := scanRateLimit(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list rate limits: %w", interpretError(err))
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list rate limits: %w", interpretError(err))
	}
	slices.SortFunc(out, func(a, b *store.RateLimit) int { return comparePairs(pair{a.Tenant, a.Key}, pair{b.Tenant, b.Key}) })
	return out, nil
}

// DeleteRateLimit implements store.Store: one statement. Executions deferred
// by the limit keep their RunAt and then start freely.
func (s *Store) DeleteRateLimit(ctx context.Context, p *store.DeleteRateLimitParams) error {
	return s.deleteRecord(ctx, "rate limit", p.Key, sqlDeleteRateLimit, p.Tenant, p.Key)
}

func scanRateLimit(row pgx.Row) (*store.RateLimit, error) {
	var l store.RateLimit
	var per int64
	var tat *time.Time
	if err := row.Scan(&l.Tenant, &l.Key, &l.Rate, &per, &l.Burst, &tat, &l.CreatedAt, &l.UpdatedAt); err != nil {
		return nil, err
	}
	l.Per = time.Duration(per)
	if tat != nil {
		l.TAT = tat.UTC()
	}
	l.CreatedAt, l.UpdatedAt = l.CreatedAt.UTC(), l.UpdatedAt.UTC()
	return &l, nil
}

// pair names something a tenant scopes: a concurrency key, a rate key.
type pair struct{ tenant, name string }

func comparePairs(a, b pair) int {
	if c := strings.Compare(a.tenant, b.tenant); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// unzip returns the pairs' tenants and names as two arrays.
func unzip(ps []pair) (tenants, names []string) {
	tenants, names = make([]string, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		tenants[i], names[i] = p.tenant, p.name
	}
	return tenants, names
}

// bucket is a rate limit a claim holds (locked FOR UPDATE until it
// commits), with its TAT as the claim's starts move it.
type bucket struct {
	lim   store.RateLimit
	moved bool // the TAT changed: written back before the commit

	// Set once the bucket refused a start in this claim.
	refused  bool
	freeAt   time.Time // its next free start, fixed for the claim: a refusal moves no TAT
	deferred int       // its executions this claim deferred so far
	pending  bool      // it refused in this round: its backlog is deferred after the round
}

// take decides a start at now by the GCRA (store.RateLimit.Allow): allowed,
// the TAT moves; refused, the bucket's next free start is noted. TAT and
// free start are rounded up to the microsecond the database keeps, so a
// rounded bucket is never looser than the exact one, and an execution
// deferred to its free start is allowed then.
func (b *bucket) take(now time.Time) bool {
	if ok, next := b.lim.Allow(b.lim.TAT, now); ok {
		b.lim.TAT, b.moved = ceilMicro(next), true
		return true
	}
	if !b.refused {
		b.refused, b.freeAt = true, ceilMicro(b.lim.FreeAt(b.lim.TAT, now))
	}
	b.pending = true
	return false
}

// ceilMicro rounds t up to the microsecond.
func ceilMicro(t time.Time) time.Time {
	if m := micro(t); m.Before(t) {
		return m.Add(time.Microsecond)
	}
	return t.UTC()
}

// lockBuckets locks the rate limits of the given (tenant, rate key) pairs
// in (tenant, key) order and returns them; a pair without a limit is
// absent (its executions start freely).
func lockBuckets(ctx context.Context, tx pgx.Tx, pairs []pair) (map[pair]*bucket, error) {
	out := map[pair]*bucket{}
	if len(pairs) == 0 {
		return out, nil
	}
	tenants, keys := unzip(pairs)
	rows, err := tx.Query(ctx, sqlLockBuckets, tenants, keys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanRateLimit(rows)
		if err != nil {
			return nil, err
		}
		out[pair{l.Tenant, l.Key}] = &bucket{lim: *l}
	}
	return out, rows.Err()
}

// writeBuckets stores the TATs the claim moved.
func writeBuckets(ctx context.Context, tx pgx.Tx, buckets map[pair]*bucket) error {
	var tenants, keys []string
	var tats []time.Time
	for k, b := range buckets {
		if b.moved {
			tenants, keys, tats = append(tenants, k.tenant), append(keys, k.name), append(tats, b.lim.TAT)
		}
	}
	if len(tenants) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, sqlWriteBuckets, tenants, keys, tats)
	return err
}

// deferRefused defers the ready executions of the buckets that refused a
// start in this round of the claim (sqlDeferRated) and returns the earliest
// RunAt it gave, zero if none, and how many it deferred.
func deferRefused(ctx context.Context, tx pgx.Tx, p *store.ClaimParams, t time.Time, buckets map[pair]*bucket) (time.Time, int, error) {
	var tenants, keys []string
	var freeAt []time.Time
	var ivs []int64
	var k0 []int
	for k, b := range buckets {
		if b.pending {
			b.pending = false
			tenants, keys, freeAt = append(tenants, k.tenant), append(keys, k.name), append(freeAt, b.freeAt)
			ivs, k0 = append(ivs, int64(b.lim.Interval())), append(k0, b.deferred)
		}
	}
	if len(tenants) == 0 {
		return time.Time{}, 0, nil
	}
	filters, fargs := claimFilters(p, 7)
	rows, err := tx.Query(ctx, strings.Replace(sqlDeferRated, "{filters}", filters, 1),
		append([]any{t, tenants, keys, freeAt, ivs, k0}, fargs...)...)
	if err != nil {
		return time.Time{}, 0, err
	}
	var earliest time.Time
	var k pair
	var runAt time.Time
	n := 0
	_, err = pgx.ForEachRow(rows, []any{&k.tenant, &k.name, &runAt}, func() error {
		buckets[k].deferred++
		n++
		if earliest.IsZero() || runAt.Before(earliest) {
			earliest = runAt.UTC()
		}
		return nil
	})
	return earliest, n, err
}
