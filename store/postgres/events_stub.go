package postgres

import (
	"context"
	"fmt"

	"github.com/latch-run/latch/store"
)

// Publish is not built on this backend yet.
func (s *Store) Publish(context.Context, *store.PublishParams) (*store.PublishResult, error) {
	return nil, fmt.Errorf("postgres: publish: %w", store.ErrUnsupported)
}

// PutSubscription is not built on this backend yet.
func (s *Store) PutSubscription(context.Context, *store.PutSubscriptionParams) (*store.PutSubscriptionResult, error) {
	return nil, fmt.Errorf("postgres: put subscription: %w", store.ErrUnsupported)
}

// GetSubscription is not built on this backend yet.
func (s *Store) GetSubscription(context.Context, *store.GetSubscriptionParams) (*store.Subscription, error) {
	return nil, fmt.Errorf("postgres: get subscription: %w", store.ErrUnsupported)
}

// ListSubscriptions is not built on this backend yet.
func (s *Store) ListSubscriptions(context.Context, *store.ListSubscriptionsParams) ([]*store.Subscription, error) {
	return nil, fmt.Errorf("postgres: list subscriptions: %w", store.ErrUnsupported)
}

// DeleteSubscription is not built on this backend yet.
func (s *Store) DeleteSubscription(context.Context, *store.DeleteSubscriptionParams) error {
	return fmt.Errorf("postgres: delete subscription: %w", store.ErrUnsupported)
}
