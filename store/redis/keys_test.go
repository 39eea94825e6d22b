package redis

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/internal/testdb"
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
	rdb, src := libTest(t)
	k, err := newKeys("keys-test")
	if err != nil {
		t.Fatal(err)
	}
	// Read-only: the script only builds strings.
	body := string(src) + `
return {k_exec('id-1'), k_tenant('acme'), k_dedup('acme'), k_dedupexp(), k_readykinds(),
  k_ready_t('acme'), k_ready_q('mail'), k_ready_k('http'), k_sched(), k_due(), k_running(),
  k_ck(scoped('acme', 'c:1')), k_ckparkg(scoped('acme', 'c:1')), k_ckpark(scoped('acme', 'c:1')),
  ck_group({kind = 'http', queue = 'mail:1', climit = '3'}),
  park_split(ck_group({kind = 'a:1', queue = '', climit = '12', rkey = 'r:2'}) .. 'm:1'), k_done('acme'), k_list(), k_list_t('acme'),
  NS .. ':version', NS .. ':changed', dedup_member('acme', 'k:1'),
  string.sub('` + prioLex(3) + timeLex(9) + `id-1', MEMBER_ID),
  k_schedule(scoped('acme', 's:1')), k_schedules('acme'), k_nextrun(), k_schedlive(scoped('acme', 's:1')),
  k_ratelimit(scoped('acme', 'r:1')), k_ratelimits('acme'), k_apikey('h1'), k_keyids('acme'), k_turns(), k_turnseq(),
  k_steps('id-1'), k_steporder('id-1'), k_sigbuf(scoped('id-1', 'approve')), k_signames('id-1'), k_sigkeys('id-1'), k_wake(),
  k_runs('id-1'), k_qqueued(scoped('acme', 'mail')), k_qsched(scoped('acme', 'mail')),
  k_qsusp(scoped('acme', 'mail')), k_queues('acme'), k_servers(), k_server('h:1'), k_workers(), k_activity(),
  k_activity_m('1931245200000000'), worker_member('h:1', 'acme', 'w:1'), k_ready_tk('acme', 'h:1'),
  worker_tenant(worker_member('h:1', 'acme', 'w:1')), worker_tenant(worker_member('', '', '')),
  k_ckrun(scoped('acme', 'c:1')), k_workerclaims(), k_kids('id-1'), k_spawns('id-1'),
  k_event('id-1'), k_evname(scoped('acme', 'e:1')), k_evkey(scoped('acme', scoped('e:1', 'k:1'))), k_evexp('acme'),
  k_evidem('acme'), k_evwait(scoped('acme', 'e:1')), k_evwaitk(scoped('acme', scoped('e:1', 'k:1'))), k_evdone('id-1'),
  k_sub(scoped('acme', 's:1')), k_subs('acme'), k_subev(scoped('acme', 'e:1')),
  string.sub(ev_member(300, 'id-1'), EV_MEMBER_ID), ev_member(300, 'id-1')}`
	got, err := rdb.Eval(context.Background(), body, nil, k.ns).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{k.exec("id-1"), k.tenant("acme"), k.dedup("acme"), k.dedupExp(), k.readyKinds(),
		k.readyTenant("acme"), k.readyQueue("mail"), k.readyKind("http"), k.sched(), k.due(), k.running(),
		k.conc(scoped("acme", "c:1")), k.concPark(scoped("acme", "c:1")), k.concParkOld(scoped("acme", "c:1")),
		concGroup("http", "mail:1", "3", ""), concGroup("a:1", "", "12", "r:2"), k.done("acme"), k.list(), k.listTenant("acme"),
		k.version(), k.channel(), dedupMember("acme", "k:1"), "id-1",
		k.schedule(scoped("acme", "s:1")), k.schedules("acme"), k.nextRun(), k.scheduleLive(scoped("acme", "s:1")),
		k.rateLimit(scoped("acme", "r:1")), k.rateLimits("acme"), k.apiKey("h1"), k.keyIDs("acme"), k.turns(), k.turnSeq(),
		k.steps("id-1"), k.stepOrder("id-1"), k.sigBuf(scoped("id-1", "approve")), k.sigNames("id-1"), k.sigKeys("id-1"), k.wake(),
		k.runs("id-1"), k.qQueued(scoped("acme", "mail")), k.qSched(scoped("acme", "mail")),
		k.qSusp(scoped("acme", "mail")), k.queues("acme"), k.servers(), k.server("h:1"), k.workers(), k.activity(),
		k.activityMinute(1931245200000000), workerMember("h:1", "acme", "w:1"), k.readyTenantKind("acme", "h:1"), "acme", "",
		k.concRun(scoped("acme", "c:1")), k.workerClaims(), k.kids("id-1"), k.spawns("id-1"),
		k.event("id-1"), k.eventsByName(scoped("acme", "e:1")), k.eventsByKey(eventKeyScope("acme", "e:1", "k:1")), k.eventExp("acme"),
		k.eventIdem("acme"), k.eventWaits(scoped("acme", "e:1")), k.eventWaitsKey(eventKeyScope("acme", "e:1", "k:1")), k.consumed("id-1"),
		k.subscription(scoped("acme", "s:1")), k.subscriptions("acme"), k.subsByEvent(scoped("acme", "e:1")),
		"id-1", eventMember(300, "id-1")}
	if len(got) != len(want) {
		t.Fatalf("Lua built %d names, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("name %d: Lua %q, Go %q", i, got[i], want[i])
		}
	}
}

// TestLuaTimeLexMatchesGo checks lib.lua's time_lex, which claim.lua uses
// for the run_at it gives a rate-deferred execution, against timeLex.
func TestLuaTimeLexMatchesGo(t *testing.T) {
	rdb, src := libTest(t)
	times := []int64{0, 1, 15, 16, 255, 1 << 40, 1_931_245_200_000_000, 1<<53 - 1,
		-1, -2, -16, -17, -1 << 40, -(1<<53 - 1)}
	var args []any
	for _, v := range times {
		args = append(args, itoa(v))
	}
	body := string(src) + `
local out = {}
for i = 2, #ARGV do out[#out + 1] = time_lex(ARGV[i]) end
return out`
	got, err := rdb.Eval(context.Background(), body, nil, append([]any{"{keys-test}"}, args...)...).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range times {
		if got[i] != timeLex(v) {
			t.Errorf("time_lex(%d) = %s, timeLex = %s", v, got[i], timeLex(v))
		}
	}
}

// libTest returns a client of the test server, closed when t ends, and the
// source of lib.lua, for read-only scripts that check its helpers; it skips
// t when no server is named.
func libTest(t *testing.T) (*goredis.Client, []byte) {
	t.Helper()
	u := testdb.URL(t, testdb.RedisEnv, "the checks of lib.lua's helpers")
	opt, err := goredis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	src, err := luaFS.ReadFile("lua/lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	return rdb, src
}
