package latch_test

import (
	"errors"
	"testing"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/store"
)

// The Go API's tenant storage budget: set on create and by update, read
// with its usage; a submit past it is ErrStorageExceeded.
func TestTenantStorageBudget(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	ten, err := c.CreateTenant(ctx, "small", latch.TenantOptions{MaxStoredBytes: 20})
	if err != nil || ten.MaxStoredBytes != 20 {
		t.Fatalf("create: %+v %v", ten, err)
	}
	if _, _, err := c.Submit(ctx, "small", latch.SubmitRequest{Kind: "k", Payload: map[string]string{"pad": "0123456789"}}); err != nil {
		t.Fatal(err) // {"pad":"0123456789"}: 20 bytes
	}
	if _, _, err := c.Submit(ctx, "small", latch.SubmitRequest{Kind: "k"}); !errors.Is(err, latch.ErrStorageExceeded) {
		t.Errorf("a submit past the budget: %v, want ErrStorageExceeded", err)
	}
	more := int64(100)
	ten, err = c.UpdateTenant(ctx, "small", latch.TenantUpdate{MaxStoredBytes: &more})
	if err != nil || ten.MaxStoredBytes != 100 || ten.StoredBytes != 20 {
		t.Fatalf("update: %+v %v; want 20 of 100 bytes", ten, err)
	}
	if got, _ := c.GetTenant(ctx, "acme"); got.MaxStoredBytes != store.DefaultMaxStoredBytes {
		t.Errorf("a tenant created without it: budget %d", got.MaxStoredBytes)
	}
}
