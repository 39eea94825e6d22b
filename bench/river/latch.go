package main

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/engine/enginebench"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/storebench"
)

// latch's side: the PostgreSQL store, migrated into a fresh schema, driven
// by the shared workloads of store/storebench and engine/enginebench, so
// these figures come from the same code as `go test -bench` and `latch
// bench`.

type latchSide struct {
	cfg     *config
	schemas *schemas
}

// open opens a latch store on schema with a pool of conns connections, all
// of them open before it is handed out.
func (l *latchSide) open(ctx context.Context, schema string, conns int32) (*postgres.Store, error) {
	s, err := postgres.Open(ctx, l.cfg.db, postgres.WithMigrate(), postgres.WithConfig(func(c *pgxpool.Config) {
		c.MaxConns = conns
		c.ConnConfig.RuntimeParams["search_path"] = schema
	}))
	if err != nil {
		return nil, err
	}
	if err := warm(ctx, int(conns), s.Ping); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// run runs fn on a fresh schema with one store of conns connections and a
// tenant whose quota no workload reaches, then drops the schema.
func (l *latchSide) run(ctx context.Context, conns int32, fn func(s *postgres.Store, schema, tenant string) (*storebench.Result, error)) (*storebench.Result, error) {
	schema, err := l.schemas.create(ctx, "bench_latch")
	if err != nil {
		return nil, err
	}
	defer l.schemas.drop(schema)
	s, err := l.open(ctx, schema, conns)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	tenant, err := storebench.Setup(ctx, s, 1_000_000)
	if err != nil {
		return nil, err
	}
	return fn(s, schema, tenant)
}

func (l *latchSide) submit(ctx context.Context, n, clients int) (*storebench.Result, error) {
	return l.run(ctx, l.cfg.pool, func(s *postgres.Store, _, tenant string) (*storebench.Result, error) {
		return storebench.Submit(ctx, s, tenant, n, clients)
	})
}

func (l *latchSide) batch(ctx context.Context) (*storebench.Result, error) {
	return l.run(ctx, l.cfg.pool, func(s *postgres.Store, _, tenant string) (*storebench.Result, error) {
		return storebench.SubmitBatch(ctx, s, tenant, l.cfg.batchN, l.cfg.batch)
	})
}

func (l *latchSide) drain(ctx context.Context) (*storebench.Result, error) {
	return l.run(ctx, l.cfg.workerPool, func(s *postgres.Store, _, tenant string) (*storebench.Result, error) {
		return enginebench.WorkerDrain(ctx, s, tenant, l.cfg.drainN, l.cfg.slots)
	})
}

// submitToStart submits through one store and works from another on the
// same schema, as an API server and a worker process would: the wake-up
// goes through PostgreSQL (NOTIFY). With inProcess both are one store.
func (l *latchSide) submitToStart(ctx context.Context, inProcess bool) (*storebench.Result, error) {
	return l.run(ctx, l.cfg.pool, func(s *postgres.Store, schema, tenant string) (*storebench.Result, error) {
		work := s
		if !inProcess {
			var err error
			work, err = l.open(ctx, schema, l.cfg.workerPool)
			if err != nil {
				return nil, err
			}
			defer work.Close()
		}
		return enginebench.SubmitToStart(ctx, s, work, tenant, l.cfg.rate, l.cfg.duration, l.cfg.slots)
	})
}

func (l *latchSide) contended(ctx context.Context) (*storebench.Result, error) {
	return l.run(ctx, l.cfg.pool, func(s *postgres.Store, _, tenant string) (*storebench.Result, error) {
		return storebench.Contended(ctx, s, tenant, l.cfg.rounds, l.cfg.contenders)
	})
}
