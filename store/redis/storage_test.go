package redis

import (
	"testing"

	"github.com/latch-run/latch/store"
)

// lib.lua's default storage budget, for tenants created before the budget
// had a field, is the store's.
func TestLuaStorageDefaultMatchesGo(t *testing.T) {
	rdb, src := libTest(t)
	body := string(src) + `
return DEFAULT_MAX_BYTES`
	got, err := rdb.Eval(t.Context(), body, nil, "{storage-test}").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if got != store.DefaultMaxStoredBytes {
		t.Errorf("lib.lua DEFAULT_MAX_BYTES = %d, store.DefaultMaxStoredBytes = %d", got, store.DefaultMaxStoredBytes)
	}
	if m := parseTenant(map[string]string{"name": "old", "stored": "7"}); m.MaxStoredBytes != store.DefaultMaxStoredBytes || m.StoredBytes != 7 {
		t.Errorf("a tenant hash without max_bytes reads %+v, want the default budget", m)
	}
}
