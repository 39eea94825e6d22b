// Package sqlite is latch's embedded default backend: one SQLite file in WAL
// mode, reached through the pure-Go driver modernc.org/sqlite.
//
// Atomicity: every Store operation that writes runs as one BEGIN IMMEDIATE
// transaction on the single writer connection, so the write lock is taken
// before the first read of the operation and no other writer — in this
// process or another one sharing the file — can interleave between a check
// and the act that depends on it. Reads use a separate pool of read-only
// connections and see the last committed state.
//
// Durability: synchronous=FULL, so a transaction that returned is on disk
// before the caller answers (I8).
//
// Wake-ups: the Store implements store.Notifier for its own process.
package sqlite
