package store

import "time"

// The reads behind the console's overview and the metrics of every server
// (docs/console.md, docs/observability.md): how deep each queue is, which
// servers and workers are alive, how many runs started and failed minute by
// minute, which rate limits and concurrency keys are in use. None of them
// is on a hot path; each is one read (or, for ReportServer, one write every
// ReportEvery per server).

// QueueStatsParams are the arguments of Store.QueueStats.
type QueueStatsParams struct {
	Tenant string // "" = every tenant
	Now    time.Time
}

// QueueStats counts one tenant's executions in one queue that are not
// terminal. A queue appears while it holds at least one.
type QueueStats struct {
	Tenant string
	Queue  string
	// Ready: queued, or scheduled with RunAt not after Now — what a claim
	// may take (limits aside). OldestReadyAt is the smallest RunAt among
	// them (nil when none): how long the oldest has waited.
	Ready         int
	OldestReadyAt *time.Time
	Scheduled     int // scheduled with RunAt after Now
	Running       int
	Suspended     int
}

// ServerReport is what a server (`latch serve`, or a process running
// latch.Worker) writes about itself every ReportEvery: that it is alive,
// the workers that claimed through it since its previous report, and the
// runs started and failed since then.
type ServerReport struct {
	ID        string // unique per process, e.g. host:pid:random
	Host      string
	Version   string
	StartedAt time.Time
	Workers   []WorkerSeen
	// Activity holds counts not yet reported, by tenant and minute; the
	// store adds them to what it has (the report is a delta, so two
	// servers' counts sum).
	//
	// A worker of a tenant is recorded only for a tenant that exists and
	// was created at or before the worker's LastSeenAt; an activity count
	// only for a tenant that exists. So a report pending when the tenant
	// was deleted and written after the delete records nothing of it, and
	// one written after a new tenant of the same name was created shows
	// none of the old tenant's workers. (Its counts then do reach the new
	// tenant: a count is dated by its minute only, and a server counts
	// runs of tenants created during that minute too.)
	Activity []ActivityCount
	Now      time.Time
}

// WorkerSeen is a worker that claimed through a server: an in-process
// worker slot of `latch serve` or latch.Worker (Tenant ""), or a worker
// polling POST /api/workers/claim (Tenant: the key's tenant; "" for the
// admin key).
type WorkerSeen struct {
	ID         string
	Tenant     string
	ServerID   string // set on read
	LastSeenAt time.Time
	// Queues and Kinds are the filters of the worker's latest claim
	// (ClaimParams.Queues, Kinds): empty claims every queue, every kind.
	Queues []string
	Kinds  []string
}

// ActivityCount is a delta of one tenant's runs in the minute starting at
// Minute (a whole UTC minute).
type ActivityCount struct {
	Tenant   string
	Minute   time.Time
	Starts   int // leases claimed
	Failures int // runs that ended in Fail, retried or not (an expired lease is a rescue, not counted here)
}

// PresenceParams are the arguments of Store.Presence.
type PresenceParams struct {
	// Tenant "" reads every server and worker; a tenant reads only its
	// own workers (Servers is then nil: what runs behind the API is not a
	// tenant's to see).
	Tenant string
	Since  time.Time // servers and workers last seen before it are left out
}

// Presence lists the servers and workers seen since PresenceParams.Since,
// servers by ID, workers by ServerID then ID.
type Presence struct {
	Servers []*Server
	Workers []*WorkerSeen
}

// Server is a server's latest report.
type Server struct {
	ID         string
	Host       string
	Version    string
	StartedAt  time.Time
	LastSeenAt time.Time
}

// ActivityParams are the arguments of Store.Activity.
type ActivityParams struct {
	Tenant string // "" = the sum over every tenant
	Since  time.Time
}

// ActivityMinute is one minute's sum, Minute a whole UTC minute.
type ActivityMinute struct {
	Minute   time.Time
	Starts   int
	Failures int
}

// ListRateLimitsParams are the arguments of Store.ListRateLimits.
type ListRateLimitsParams struct {
	Tenant string // "" = every tenant
}

// ConcurrencyKeysParams are the arguments of Store.ConcurrencyKeys.
type ConcurrencyKeysParams struct {
	Tenant string // "" = every tenant
}

// ConcurrencyKeyUse is a concurrency key with running executions. Limit is
// the largest ConcurrencyLimit among them (each execution carries its own;
// a claim holds each candidate to its own).
type ConcurrencyKeyUse struct {
	Tenant  string
	Key     string
	Running int
	Limit   int
}

// Retention of the presence data, applied by Prune.
const (
	// ReportEvery is how often a server reports (ServerReport).
	ReportEvery = 10 * time.Second
	// PresenceKept: Prune forgets servers and workers not seen for this
	// long.
	PresenceKept = time.Hour
	// ActivityKept: Prune drops activity minutes older than this.
	ActivityKept = 2 * time.Hour
)

// MinuteOf is the whole UTC minute t falls in: the key of activity counts.
func MinuteOf(t time.Time) time.Time { return t.UTC().Truncate(time.Minute) }
