package redis

import (
	"context"
	"os"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

func TestMemberEncodingSortsInClaimOrder(t *testing.T) {
	// Higher priority first, then earlier run_at, for negative values too.
	ordered := []string{
		prioLex(1<<62) + timeLex(0),
		prioLex(5) + timeLex(-5),
		prioLex(5) + timeLex(7),
		prioLex(0) + timeLex(-1<<40),
		prioLex(0) + timeLex(1<<50),
		prioLex(-1) + timeLex(0),
		prioLex(-1<<62) + timeLex(0),
	}
	for i := 1; i < len(ordered); i++ {
		if !(ordered[i-1] < ordered[i]) {
			t.Errorf("member %d %s does not sort before %d %s", i-1, ordered[i-1], i, ordered[i])
		}
	}
	for _, m := range ordered {
		if len(m) != memberIDOffset {
			t.Errorf("member prefix %s has length %d, want %d", m, len(m), memberIDOffset)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	for _, ok := range []string{"latch", "prod-eu.1", "a:b_c"} {
		if err := checkPrefix(ok); err != nil {
			t.Errorf("checkPrefix(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "{latch}", "a*", "a b", "x?", "[x]", strings.Repeat("a", 65)} {
		if checkPrefix(bad) == nil {
			t.Errorf("checkPrefix(%q) accepted it", bad)
		}
	}
}

// TestLuaKeysMatchGo checks that lua/lib.lua derives the same key names as
// keys.go: the scripts name some keys through KEYS (built in Go) and derive
// others in Lua, and the two must meet.
func TestLuaKeysMatchGo(t *testing.T) {
	u := os.Getenv("LATCH_TEST_REDIS_URL")
	if u == "" {
		t.Skip("SKIP: LATCH_TEST_REDIS_URL is not set")
	}
	opt, err := goredis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	k, err := newKeys("keys-test")
	if err != nil {
		t.Fatal(err)
	}
	src, err := luaFS.ReadFile("lua/lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	// Read-only: the script only builds strings.
	body := string(src) + `
return {k_exec('id-1'), k_tenant('acme'), k_dedup('acme'), k_dedupexp(), k_readykinds(),
  k_ready_t('acme'), k_ready_q('mail'), k_ready_k('http'), k_sched(), k_due(), k_running(),
  k_ck(ck_scope('acme', 'c:1')), k_ckpark(ck_scope('acme', 'c:1')), k_done('acme'), k_list(), k_list_t('acme'),
  NS .. ':version', NS .. ':changed', dedup_member('acme', 'k:1'),
  string.sub('` + prioLex(3) + timeLex(9) + `id-1', MEMBER_ID)}`
	got, err := rdb.Eval(context.Background(), body, nil, k.ns).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{k.exec("id-1"), k.tenant("acme"), k.dedup("acme"), k.dedupExp(), k.readyKinds(),
		k.readyTenant("acme"), k.readyQueue("mail"), k.readyKind("http"), k.sched(), k.due(), k.running(),
		k.conc(concScope("acme", "c:1")), k.concPark(concScope("acme", "c:1")), k.done("acme"), k.list(), k.listTenant("acme"),
		k.version(), k.channel(), dedupMember("acme", "k:1"), "id-1"}
	if len(got) != len(want) {
		t.Fatalf("Lua built %d names, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("name %d: Lua %q, Go %q", i, got[i], want[i])
		}
	}
}
