package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// Subscription statements (store/events.go).
const (
	subscriptionColumns = `tenant, name, event, kind, queue, priority, max_attempts, timeout_seconds,
    concurrency_key, concurrency_limit, enabled, created_at, updated_at`

	sqlSubscriptionTenant = `SELECT 1 FROM latch_tenants WHERE name = $1 FOR KEY SHARE`

	// Whether the tenant has subscription $2, and how many it has.
	sqlSubscriptionCount = `SELECT EXISTS (SELECT 1 FROM latch_subscriptions WHERE tenant = $1 AND name = $2),
    (SELECT count(*) FROM latch_subscriptions WHERE tenant = $1)`

	// Create or replace; a replace keeps created_at. created: the row is
	// new (xmax 0: no earlier version).
	sqlPutSubscription = `
INSERT INTO latch_subscriptions (` + subscriptionColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
ON CONFLICT (tenant, name) DO UPDATE SET event = excluded.event, kind = excluded.kind, queue = excluded.queue,
    priority = excluded.priority, max_attempts = excluded.max_attempts, timeout_seconds = excluded.timeout_seconds,
    concurrency_key = excluded.concurrency_key, concurrency_limit = excluded.concurrency_limit,
    enabled = excluded.enabled, updated_at = excluded.updated_at
RETURNING ` + subscriptionColumns + `, xmax = 0`

	sqlGetSubscription = `SELECT ` + subscriptionColumns + ` FROM latch_subscriptions WHERE tenant = $1 AND name = $2`
	// Ranges of the primary key (tenant, name) after ($1, $2): every
	// tenant's, or tenant $4's.
	sqlListSubscriptions = `SELECT ` + subscriptionColumns + ` FROM latch_subscriptions
WHERE (tenant, name) > ($1, $2) ORDER BY tenant, name LIMIT $3`
	sqlListTenantSubscriptions = `SELECT ` + subscriptionColumns + ` FROM latch_subscriptions
WHERE tenant = $4 AND (tenant, name) > ($1, $2) ORDER BY tenant, name LIMIT $3`
	sqlDeleteSubscription = `DELETE FROM latch_subscriptions WHERE tenant = $1 AND name = $2`
)

func subscriptionFields(sub *store.Subscription) []any {
	return []any{&sub.Tenant, &sub.Name, &sub.Event, &sub.Kind, &sub.Queue, &sub.Priority, &sub.MaxAttempts,
		&sub.TimeoutSeconds, &sub.ConcurrencyKey, &sub.ConcurrencyLimit, &sub.Enabled, &sub.CreatedAt, &sub.UpdatedAt}
}

func utcSubscription(sub *store.Subscription) *store.Subscription {
	sub.CreatedAt, sub.UpdatedAt = sub.CreatedAt.UTC(), sub.UpdatedAt.UTC()
	return sub
}

// scanSubscriptions reads the rows of a query of subscriptionColumns.
func scanSubscriptions(rows pgx.Rows, err error) ([]*store.Subscription, error) {
	if err != nil {
		return nil, err
	}
	var out []*store.Subscription
	var sub store.Subscription
	_, err = pgx.ForEachRow(rows, subscriptionFields(&sub), func() error {
		c := sub
		out = append(out, utcSubscription(&c))
		return nil
	})
	return out, err
}

// PutSubscription implements store.Store, as one transaction: the tenant
// row (FOR KEY SHARE, as a publish holds it), then the tenant's
// subscription lock (lockSpaceSubSet), under which the count that bounds a
// creation is exact.
func (s *Store) PutSubscription(ctx context.Context, p *store.PutSubscriptionParams) (*store.PutSubscriptionResult, error) {
	sub := p.Subscription
	if sub.Tenant == "" {
		return nil, fmt.Errorf("%w: a subscription names its tenant", store.ErrInvalid)
	}
	if err := sub.Check(); err != nil {
		return nil, err
	}
	t := micro(now(p.Now))
	var res *store.PutSubscriptionResult
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		var one int
		if err := tx.QueryRow(ctx, sqlSubscriptionTenant, sub.Tenant).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return false, fmt.Errorf("tenant %q: %w", sub.Tenant, store.ErrNotFound)
			}
			return false, err
		}
		if err := lockPairs(ctx, tx, lockSpaceSubSet, false, []string{sub.Tenant}, []string{""}); err != nil {
			return false, err
		}
		var exists bool
		var n int
		if err := tx.QueryRow(ctx, sqlSubscriptionCount, sub.Tenant, sub.Name).Scan(&exists, &n); err != nil {
			return false, err
		}
		if !exists && n >= p.SubscriptionBound() {
			return false, fmt.Errorf("tenant %q has %d subscriptions, its bound: %w", sub.Tenant, n,
				store.ErrTooManySubscriptions)
		}
		var out store.Subscription
		var created bool
		err := tx.QueryRow(ctx, sqlPutSubscription, sub.Tenant, sub.Name, sub.Event, sub.Kind, sub.Queue, sub.Priority,
			sub.MaxAttempts, sub.TimeoutSeconds, sub.ConcurrencyKey, sub.ConcurrencyLimit, sub.Enabled, t).
			Scan(append(subscriptionFields(&out), &created)...)
		if err != nil {
			return false, err
		}
		res = &store.PutSubscriptionResult{Subscription: utcSubscription(&out), Created: created}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: put subscription: %w", err)
	}
	return res, nil
}

// GetSubscription implements store.Store.
func (s *Store) GetSubscription(ctx context.Context, p *store.GetSubscriptionParams) (*store.Subscription, error) {
	var sub store.Subscription
	err := s.pool.QueryRow(ctx, sqlGetSubscription, p.Tenant, p.Name).Scan(subscriptionFields(&sub)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("subscription %q of tenant %q: %w", p.Name, p.Tenant, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get subscription: %w", interpretError(err))
	}
	return utcSubscription(&sub), nil
}

// ListSubscriptions implements store.Store.
func (s *Store) ListSubscriptions(ctx context.Context, p *store.ListSubscriptionsParams) ([]*store.Subscription, error) {
	query, args := sqlListSubscriptions, []any{p.After.Tenant, p.After.Name, p.ListLimit()}
	if p.Tenant != "" {
		query, args = sqlListTenantSubscriptions, append(args, p.Tenant)
	}
	out, err := scanSubscriptions(s.pool.Query(ctx, query, args...))
	if err != nil {
		return nil, fmt.Errorf("postgres: list subscriptions: %w", interpretError(err))
	}
	return out, nil
}

// DeleteSubscription implements store.Store: one statement.
func (s *Store) DeleteSubscription(ctx context.Context, p *store.DeleteSubscriptionParams) error {
	var n int64
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		tag, err := c.Exec(ctx, sqlDeleteSubscription, p.Tenant, p.Name)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete subscription: %w", interpretError(err))
	}
	if n == 0 {
		return fmt.Errorf("subscription %q of tenant %q: %w", p.Name, p.Tenant, store.ErrNotFound)
	}
	return nil
}
