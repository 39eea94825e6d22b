package main

import (
	"encoding/json"
	"testing"
)

// `latch tenant create|update --max-stored-bytes N` sets the storage
// budget; `latch tenant get` shows it with the usage.
func TestTenantStorageBudgetFlag(t *testing.T) {
	tenantServer(t)
	t.Setenv("LATCH_KEY", testAdminKey)
	t.Setenv("LATCH_TENANT", "")
	var ten struct {
		MaxStoredBytes *int64 `json:"max_stored_bytes"`
		StoredBytes    *int64 `json:"stored_bytes"`
	}
	for _, c := range []struct {
		args []string
		want int64
	}{
		{[]string{"tenant", "create", "--max-stored-bytes", "5000", "big"}, 5000},
		{[]string{"tenant", "update", "--max-stored-bytes", "7000", "big"}, 7000},
		{[]string{"tenant", "get", "big"}, 7000},
	} {
		code, out, errOut := cli(t, c.args...)
		if code != 0 {
			t.Fatalf("latch %v: %d %s", c.args, code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &ten); err != nil || ten.MaxStoredBytes == nil || *ten.MaxStoredBytes != c.want {
			t.Fatalf("latch %v printed %s (%v), want max_stored_bytes %d", c.args, out, err, c.want)
		}
	}
	if ten.StoredBytes == nil || *ten.StoredBytes != 0 {
		t.Errorf("tenant get: stored_bytes %v, want 0", ten.StoredBytes)
	}
	if code, _, _ := cli(t, "tenant", "update", "--max-stored-bytes", "lots", "big"); code == 0 {
		t.Error("--max-stored-bytes lots was taken")
	}
}
