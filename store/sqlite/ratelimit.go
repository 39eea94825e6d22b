package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

const rateLimitColumns = `tenant, rate_key, rate, per, burst, tat, created_at, updated_at`

func scanRateLimit(row scanner) (*store.RateLimit, error) {
	var r store.RateLimit
	var per, created, updated int64
	var tat sql.NullInt64
	if err := row.Scan(&r.Tenant, &r.Key, &r.Rate, &per, &r.Burst, &tat, &created, &updated); err != nil {
		return nil, err
	}
	r.Per, r.CreatedAt, r.UpdatedAt = durationNS(per), fromNS(created), fromNS(updated)
	if tat.Valid {
		r.TAT = fromNS(tat.Int64)
	}
	return &r, nil
}

// getRateLimit reads the tenant's limit for key; ErrNotFound if none.
func getRateLimit(ctx context.Context, q querier, tenant, key string) (*store.RateLimit, error) {
	return getOne(ctx, q, scanRateLimit, fmt.Sprintf("rate limit %q", key), "get rate limit",
		`SELECT `+rateLimitColumns+` FROM rate_limits WHERE tenant = ? AND rate_key = ?`, tenant, key)
}

// PutRateLimit implements store.Store. A replace changes the settings and
// keeps the bucket's TAT and CreatedAt.
func (s *Store) PutRateLimit(ctx context.Context, p *store.PutRateLimitParams) (*store.RateLimit, error) {
	t := now(p.Now)
	in := p.Limit
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var r *store.RateLimit
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		if _, err := getTenant(ctx, tx, in.Tenant); err != nil {
			return false, err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO rate_limits (tenant, rate_key, rate, per, burst,
			created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, rate_key) DO UPDATE SET rate = excluded.rate, per = excluded.per,
			burst = excluded.burst, updated_at = excluded.updated_at`,
			in.Tenant, in.Key, in.Rate, int64(in.Per), in.Burst, ns(t), ns(t))
		if err != nil {
			return false, fmt.Errorf("sqlite: put rate limit: %w", err)
		}
		r, err = getRateLimit(ctx, tx, in.Tenant, in.Key)
		return false, err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// GetRateLimit implements store.Store.
func (s *Store) GetRateLimit(ctx context.Context, p *store.GetRateLimitParams) (*store.RateLimit, error) {
	return interpreted(getRateLimit(ctx, s.read, p.Tenant, p.Key))
}

// ListRateLimits implements store.Store: a range of the primary key, in
// its order.
func (s *Store) ListRateLimits(ctx context.Context, p *store.ListRateLimitsParams) ([]*store.RateLimit, error) {
	query := `SELECT ` + rateLimitColumns + ` FROM rate_limits`
	var args []any
	if p.Tenant != "" {
		query += ` WHERE tenant = ?`
		args = append(args, p.Tenant)
	}
	rows, err := s.read.QueryContext(ctx, query+` ORDER BY tenant, rate_key`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list rate limits: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.RateLimit
	for rows.Next() {
		r, err := scanRateLimit(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list rate limits: %w", interpretError(err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list rate limits: %w", interpretError(err))
	}
	return out, nil
}

// DeleteRateLimit implements store.Store.
func (s *Store) DeleteRateLimit(ctx context.Context, p *store.DeleteRateLimitParams) error {
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		r, err := tx.ExecContext(ctx, `DELETE FROM rate_limits WHERE tenant = ? AND rate_key = ?`, p.Tenant, p.Key)
		if err != nil {
			return false, fmt.Errorf("sqlite: delete rate limit: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return false, fmt.Errorf("rate limit %q: %w", p.Key, store.ErrNotFound)
		}
		// Executions deferred under the limit are claimable at their RunAt
		// as they are; nothing else refers to the bucket.
		return true, nil
	})
}

// buckets are the rate limits one claim has read, each loaded once inside
// the claim's transaction and written back (saveBuckets) in it, so the
// TAT a start moves is committed with the start itself (I7).
type buckets struct {
	tx *sql.Tx
	m  map[[2]string]*bucket // by tenant and rate key
}

// bucket is one (tenant, rate key) during a claim. limit is nil when the
// tenant has no limit for the key: its executions start freely.
type bucket struct {
	limit   *store.RateLimit
	refused int // candidates this claim deferred for the bucket
	moved   bool
}

func newBuckets(tx *sql.Tx) *buckets {
	return &buckets{tx: tx, m: map[[2]string]*bucket{}}
}

// get returns the bucket of the tenant's rate key, loading it on first use.
func (bs *buckets) get(ctx context.Context, tenant, key string) (*bucket, error) {
	k := [2]string{tenant, key}
	if b, ok := bs.m[k]; ok {
		return b, nil
	}
	r, err := getRateLimit(ctx, bs.tx, tenant, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	b := &bucket{limit: r}
	bs.m[k] = b
	return b, nil
}

// take asks the bucket for a start at t. Allowed, it takes the token (TAT
// moves). Refused, it returns when the candidate is to be tried again: the
// bucket's next free start, one more interval later for each candidate the
// claim deferred for it before.
func (b *bucket) take(t time.Time) (ok bool, retryAt time.Time) {
	if b.limit == nil {
		return true, time.Time{}
	}
	ok, tat := b.limit.Allow(b.limit.TAT, t)
	if ok {
		b.limit.TAT, b.moved = tat, true
		return true, time.Time{}
	}
	b.refused++
	return false, b.limit.FreeAt(b.limit.TAT, t).Add(time.Duration(b.refused-1) * b.limit.Interval())
}

// save writes back the TAT of every bucket this claim took tokens from.
func (bs *buckets) save(ctx context.Context) error {
	for _, b := range bs.m {
		if !b.moved {
			continue
		}
		if _, err := bs.tx.ExecContext(ctx, `UPDATE rate_limits SET tat = ? WHERE tenant = ? AND rate_key = ?`,
			ns(b.limit.TAT), b.limit.Tenant, b.limit.Key); err != nil {
			return fmt.Errorf("sqlite: claim: rate limit: %w", err)
		}
	}
	return nil
}
