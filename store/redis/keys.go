package redis

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultPrefix is the key prefix used when the URL names none.
const DefaultPrefix = "latch"

// keys builds every Redis key and channel name of one latch namespace. It is
// the only place in Go that spells a key; lua/lib.lua spells the same names
// for the keys a script derives from stored data, and TestLuaKeysMatchGo
// checks that the two agree.
//
// ns is "{prefix}": the braces are a Redis Cluster hash tag, so every key of
// the namespace hashes to one slot and every script's keys are on one shard.
type keys struct{ ns string }

func newKeys(prefix string) (keys, error) {
	if err := checkPrefix(prefix); err != nil {
		return keys{}, err
	}
	return keys{ns: "{" + prefix + "}"}, nil
}

// checkPrefix rejects prefixes that would break the hash tag or make the
// namespace's SCAN pattern match more than the namespace.
func checkPrefix(p string) error {
	if p == "" {
		return errors.New("redis: empty key prefix")
	}
	if len(p) > 64 {
		return fmt.Errorf("redis: key prefix %q is longer than 64 bytes", p)
	}
	for _, r := range p {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '-' || r == '_' || r == '.' || r == ':'
		if !ok {
			return fmt.Errorf("redis: key prefix %q: only letters, digits and - _ . : are allowed", p)
		}
	}
	return nil
}

// The tenant router's keys (router.go), in the home namespace: the turns
// of the tenants (I12) and the last turn given, and the hints, one sorted
// set per kind of work (claim, promote, rescue, wake, fire) of tenant
// names scored by the earliest time, in microseconds, the tenant may have
// such work. tenantNS is the namespace of tenant t, "{prefix/t}".
func (k keys) shardTurns() string      { return k.ns + ":shard:turns" }
func (k keys) shardTurnSeq() string    { return k.ns + ":shard:turnseq" }
func (k keys) hint(what string) string { return k.ns + ":shard:hint:" + what }

// hintGen counts the lowerings of tenant t's hint of kind what: a refresh
// changes the hint only if no lowering came between its reads and its
// write (router_hints.go).
func (k keys) hintGen(what, t string) string { return k.ns + ":shard:gen:" + what + ":" + t }

// hintHold holds tenant t's hint of kind what down while calls that
// lowered it before their script have not lowered it after (hold): their
// tokens, scored by when each stops holding (ms).
func (k keys) hintHold(what, t string) string { return k.ns + ":shard:hold:" + what + ":" + t }
func (k keys) tenantNS(t string) string       { return strings.TrimSuffix(k.ns, "}") + "/" + t + "}" }

// layout marks a namespace of a cluster as the tenant router's home
// ("tenant"; absent: the single-slot layout).
func (k keys) layout() string { return k.ns + ":layout" }

// pattern matches every key of the namespace (for SCAN).
func (k keys) pattern() string { return k.ns + ":*" }

func (k keys) channel() string           { return k.ns + ":changed" }
func (k keys) version() string           { return k.ns + ":version" }
func (k keys) tenants() string           { return k.ns + ":tenants" }
func (k keys) tenant(name string) string { return k.ns + ":tenant:" + name }
func (k keys) apiKey(hash string) string { return k.ns + ":apikey:" + hash }
func (k keys) admin() string             { return k.ns + ":admin" }

// A tenant's keys by id (key id -> key hash), its rate limits' keys, a
// console session by the hash of its id, and the namespace's schema
// version (Open's backfill).
func (k keys) keyIDs(tenant string) string     { return k.ns + ":keyids:" + tenant }
func (k keys) rateLimits(tenant string) string { return k.ns + ":ratelimits:" + tenant }
func (k keys) session(idHash string) string    { return k.ns + ":session:" + idHash }
func (k keys) schema() string                  { return k.ns + ":schema" }
func (k keys) exec(id string) string           { return k.ns + ":exec:" + id }
func (k keys) dedup(tenant string) string      { return k.ns + ":dedup:" + tenant }
func (k keys) dedupExp() string                { return k.ns + ":dedupexp" }
func (k keys) readyKinds() string              { return k.ns + ":readykinds" }
func (k keys) readyTenant(t string) string {
	return k.ns + ":ready:t:" + t
}
func (k keys) readyQueue(q string) string { return k.ns + ":ready:q:" + q }
func (k keys) readyKind(kind string) string {
	return k.ns + ":ready:k:" + kind
}

// readyTenantKind is tenant t's lane of one kind: its ready executions of
// that kind (a claim filtered by kind walks these).
func (k keys) readyTenantKind(t, kind string) string {
	return k.ns + ":ready:tk:" + scoped(t, kind)
}
func (k keys) sched() string                { return k.ns + ":sched" }
func (k keys) due() string                  { return k.ns + ":due" }
func (k keys) running() string              { return k.ns + ":running" }
func (k keys) turns() string                { return k.ns + ":turns" }
func (k keys) turnSeq() string              { return k.ns + ":turnseq" }
func (k keys) conc(scope string) string     { return k.ns + ":ck:" + scope }
func (k keys) concRun(scope string) string  { return k.ns + ":ckrun:" + scope }
func (k keys) concPark(scope string) string { return k.ns + ":ckparkg:" + scope }
func (k keys) done(tenant string) string    { return k.ns + ":done:" + tenant }
func (k keys) list() string                 { return k.ns + ":list" }
func (k keys) listTenant(t string) string   { return k.ns + ":list:" + t }

// Schedules and rate limits: scope is scoped(tenant, name or key).
func (k keys) schedule(scope string) string     { return k.ns + ":schedule:" + scope }
func (k keys) schedules(tenant string) string   { return k.ns + ":schedules:" + tenant }
func (k keys) nextRun() string                  { return k.ns + ":nextrun" }
func (k keys) scheduleLive(scope string) string { return k.ns + ":schedlive:" + scope }
func (k keys) rateLimit(scope string) string    { return k.ns + ":ratelimit:" + scope }

// A flow's records, per execution (lib.lua's flows section): its journal,
// its buffered signals (a list per signal name, scope scoped(id, name),
// and the set of names that have one) and its signals' idempotency keys;
// and the suspended executions by wake_at.
func (k keys) steps(id string) string     { return k.ns + ":steps:" + id }
func (k keys) stepOrder(id string) string { return k.ns + ":steporder:" + id }
func (k keys) sigBuf(scope string) string { return k.ns + ":sigbuf:" + scope }
func (k keys) sigNames(id string) string  { return k.ns + ":signames:" + id }
func (k keys) sigKeys(id string) string   { return k.ns + ":sigkeys:" + id }
func (k keys) wake() string               { return k.ns + ":wake" }

// An execution's attempt history: a list of its runs, oldest first
// (lib.lua's runs section).
func (k keys) runs(id string) string { return k.ns + ":runs:" + id }

// A parent's children: their ids scored by spawn order (1, 2, ...), and
// its counters per spawn step (lib.lua's children section).
func (k keys) kids(id string) string   { return k.ns + ":kids:" + id }
func (k keys) spawns(id string) string { return k.ns + ":spawns:" + id }

// Events and subscriptions (events.go; lib.lua's events section). c is
// scoped(tenant, event name), ck is scoped(tenant, scoped(name, key)) for
// an event's correlation key, sc is scoped(tenant, subscription name).
func (k keys) event(id string) string        { return k.ns + ":event:" + id }
func (k keys) eventsByName(c string) string  { return k.ns + ":evname:" + c }
func (k keys) eventsByKey(ck string) string  { return k.ns + ":evkey:" + ck }
func (k keys) eventExp(tenant string) string { return k.ns + ":evexp:" + tenant }
func (k keys) eventIdem(tenant string) string {
	return k.ns + ":evidem:" + tenant
}
func (k keys) eventWaits(c string) string     { return k.ns + ":evwait:" + c }
func (k keys) eventWaitsKey(ck string) string { return k.ns + ":evwaitk:" + ck }
func (k keys) consumed(id string) string      { return k.ns + ":evdone:" + id }
func (k keys) subscription(sc string) string  { return k.ns + ":sub:" + sc }
func (k keys) subscriptions(tenant string) string {
	return k.ns + ":subs:" + tenant
}
func (k keys) subsByEvent(c string) string { return k.ns + ":subev:" + c }

// eventKeyScope is ck for tenant t's events of name with key.
func eventKeyScope(t, name, key string) string { return scoped(t, scoped(name, key)) }

// eventMember is an event's member in its indexes (lib.lua, ev_member):
// 16 hex digits of its tenant's publish sequence, then its id.
func eventMember(seq int64, id string) string { return fmt.Sprintf("%016x", seq) + id }

// The queue statistics (lib.lua's qs_enter), scope scoped(tenant, queue):
// the queued and the scheduled executions by run_at, the suspended ones,
// and a tenant's queues that have had any.
func (k keys) qQueued(scope string) string { return k.ns + ":qqueued:" + scope }
func (k keys) qSched(scope string) string  { return k.ns + ":qsched:" + scope }
func (k keys) qSusp(scope string) string   { return k.ns + ":qsusp:" + scope }
func (k keys) queues(tenant string) string { return k.ns + ":queues:" + tenant }

// Presence and activity (presence.go): the servers by last seen, a
// server's report, the workers by last seen (members workerMember), the
// activity minutes and a minute's counts.
func (k keys) servers() string                { return k.ns + ":servers" }
func (k keys) server(id string) string        { return k.ns + ":server:" + id }
func (k keys) workers() string                { return k.ns + ":workers" }
func (k keys) workerClaims() string           { return k.ns + ":workerclaims" }
func (k keys) activity() string               { return k.ns + ":activity" }
func (k keys) activityMinute(us int64) string { return k.ns + ":activity:" + itoa(us) }

// dedupMember names (tenant, dedup key) in the dedupexp sorted set: the
// tenant's length first, so that no tenant/key pair can be read two ways.
func dedupMember(tenant, key string) string {
	return strconv.Itoa(len(tenant)) + ":" + tenant + key
}

// concParkOld is the park of a concurrency key (scoped) as a latch before
// parks by group kept it (lib.lua, k_ckpark): nothing adds to it now.
func (k keys) concParkOld(scope string) string { return k.ns + ":ckpark:" + scope }

// concGroup names the group of a concurrency key's executions of one kind,
// queue, limit and rate key (lib.lua's ck_group): a parked execution's
// member in concPark is concGroup + its ready-index member, and its key's
// counter counts the group's ready ones in field "r:" + concGroup.
func concGroup(kind, queue, limit, rateKey string) string {
	return strconv.Itoa(len(kind)) + ":" + kind + strconv.Itoa(len(queue)) + ":" + queue +
		limit + ":" + strconv.Itoa(len(rateKey)) + ":" + rateKey
}

// scoped names a tenant's concurrency key (for conc and concPark), schedule
// (schedule, scheduleLive and the nextrun set) or rate key (rateLimit):
// each is scoped per tenant, and like dedupMember the tenant's length comes
// first, so that no tenant/name pair can be read two ways. An execution's
// signal buffer (sigBuf) is scoped(id, signal name) the same way. lib.lua's
// scoped is the same function.
func scoped(tenant, name string) string {
	return strconv.Itoa(len(tenant)) + ":" + tenant + name
}

// Queue members. Every ready index is a sorted set whose scores are all 0,
// so that members sort by their bytes (ZRANGEBYLEX): 16 hex digits of
// priority (descending), 16 of run_at (ascending), then the execution id.
// Lua never does 64-bit arithmetic; Go encodes both parts and the scripts
// only concatenate them.
const memberIDOffset = 32

func prioLex(p int) string {
	return hex16(^(uint64(int64(p)) ^ 1<<63))
}

func timeLex(us int64) string {
	return hex16(uint64(us) ^ 1<<63)
}

func hex16(v uint64) string {
	s := strconv.FormatUint(v, 16)
	if len(s) < 16 {
		s = strings.Repeat("0", 16-len(s)) + s
	}
	return s
}
