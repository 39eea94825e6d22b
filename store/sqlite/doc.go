// Package sqlite is latch's embedded default backend: one SQLite file in WAL
// mode, reached through the pure-Go driver modernc.org/sqlite.
//
// Atomicity: every Store operation that writes runs as one BEGIN IMMEDIATE
// transaction on the single writer connection, so the write lock is taken
// before the first read of the operation and no other writer — in this
// process or another one sharing the file — can interleave between a check
// and the act that depends on it. Reads use a separate pool of read-only
// connections and see the last committed state. Schedules and rate limits
// follow the same rule: FireSchedule's compare-and-set on the next tick, its
// overlap check and the insert of the tick's execution are one transaction,
// and so are a claim's token from a rate key's bucket and the start it pays
// for. Flows too: a step's record, a suspension, a signal's delivery and
// a wake each change the execution, its journal (flow_steps) and its
// signals (flow_signals) in one transaction, so a wait ends once, by a
// signal or by its timeout. Events too (events.go): a publish records the
// event, ends the waits it matches and starts its subscriptions' executions
// in one transaction, and a wait for an event reads its oldest match and
// suspends in one, so a publish racing a suspend is ordered by the write
// lock and never loses the wake-up.
//
// Durability: synchronous=FULL, so a transaction that returned is on disk
// before the caller answers (I8).
//
// Wake-ups: the Store implements store.Notifier and store.ChangeFeed (which
// executions changed). Its own commits wake its waiters at once. Another
// connection's commits to the file (another process's, or another Store's)
// are seen by polling PRAGMA data_version every 5 ms while someone waits on
// Changed or watches the feed, and reported on the feed as a change of
// unknown executions; an idle Store does not poll (watch.go).
package sqlite
