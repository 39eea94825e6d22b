package redis

import (
	"context"
	"fmt"

	"github.com/latch-run/latch/store"
)

// Publish is not built on this backend yet.
func (s *Router) Publish(context.Context, *store.PublishParams) (*store.PublishResult, error) {
	return nil, fmt.Errorf("redis: publish: %w", store.ErrUnsupported)
}

// PutSubscription is not built on this backend yet.
func (s *Router) PutSubscription(context.Context, *store.PutSubscriptionParams) (*store.PutSubscriptionResult, error) {
	return nil, fmt.Errorf("redis: put subscription: %w", store.ErrUnsupported)
}

// GetSubscription is not built on this backend yet.
func (s *Router) GetSubscription(context.Context, *store.GetSubscriptionParams) (*store.Subscription, error) {
	return nil, fmt.Errorf("redis: get subscription: %w", store.ErrUnsupported)
}

// ListSubscriptions is not built on this backend yet.
func (s *Router) ListSubscriptions(context.Context, *store.ListSubscriptionsParams) ([]*store.Subscription, error) {
	return nil, fmt.Errorf("redis: list subscriptions: %w", store.ErrUnsupported)
}

// DeleteSubscription is not built on this backend yet.
func (s *Router) DeleteSubscription(context.Context, *store.DeleteSubscriptionParams) error {
	return fmt.Errorf("redis: delete subscription: %w", store.ErrUnsupported)
}
