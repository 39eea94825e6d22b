package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemas creates the fresh schema each workload of each side runs in and
// drops it afterwards; dropAll drops whatever is left (an interrupted run).
type schemas struct {
	admin *pgxpool.Pool
	mu    sync.Mutex
	live  map[string]bool
}

func newSchemas(ctx context.Context, dbURL string) (*schemas, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return &schemas{admin: pool, live: map[string]bool{}}, nil
}

// create makes an empty schema named prefix_<random>.
func (s *schemas) create(ctx context.Context, prefix string) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := prefix + "_" + hex.EncodeToString(b[:])
	if _, err := s.admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create schema %s: %w", name, err)
	}
	s.mu.Lock()
	s.live[name] = true
	s.mu.Unlock()
	return name, nil
}

// drop removes a schema and everything in it. It runs on a context of its
// own so that an interrupted run still cleans up.
func (s *schemas) drop(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
		log.Printf("drop schema %s: %v", name, err)
		return
	}
	s.mu.Lock()
	delete(s.live, name)
	s.mu.Unlock()
}

func (s *schemas) dropAll() {
	s.mu.Lock()
	var names []string
	for n := range s.live {
		names = append(names, n)
	}
	s.mu.Unlock()
	for _, n := range names {
		s.drop(n)
	}
	s.admin.Close()
}

// riverPool opens a pgx pool of size conns for River, as River's docs do
// (pgxpool.New on the URL), with every connection opened before the clock
// starts.
func riverPool(ctx context.Context, dbURL string, conns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := warm(ctx, int(conns), pool.Ping); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// warm runs n pings at once so that a pool has its connections open, as a
// running server's pool would: the first round of a workload should not pay
// for connecting. Both sides are warmed the same way.
func warm(ctx context.Context, n int, ping func(context.Context) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = ping(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
