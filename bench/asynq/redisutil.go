package main

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// redisOptions parses the -redis URL and selects db.
func redisOptions(rawURL string, db int) (*goredis.Options, error) {
	opt, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	opt.DB = db
	return opt, nil
}

// dbURL is rawURL with its path set to /db.
func dbURL(rawURL string, db int) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("-redis: %w", err)
	}
	u.Path = "/" + strconv.Itoa(db)
	return u.String(), nil
}

func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// unlinkPattern deletes every key matching pattern in rdb's DB and returns
// how many it deleted.
func unlinkPattern(ctx context.Context, rdb *goredis.Client, pattern string) (int, error) {
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	n := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := rdb.Unlink(ctx, batch...).Err(); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return n, err
	}
	return n, flush()
}

// statsProbe reads the Redis server's CPU time. It is the whole server's:
// other clients of a shared server add to it.
type statsProbe struct{ rdb *goredis.Client }

type redisCPU struct{ sys, user float64 }

func (c redisCPU) sub(o redisCPU) redisCPU { return redisCPU{c.sys - o.sys, c.user - o.user} }
func (c redisCPU) seconds() float64        { return c.sys + c.user }

func newStatsProbe(rawURL string) (*statsProbe, error) {
	opt, err := redisOptions(rawURL, 0)
	if err != nil {
		return nil, err
	}
	p := &statsProbe{rdb: goredis.NewClient(opt)}
	if _, err := p.readErr(); err != nil {
		p.close()
		return nil, fmt.Errorf("redis INFO cpu: %w", err)
	}
	return p, nil
}

func (p *statsProbe) close() { p.rdb.Close() }

func (p *statsProbe) read() redisCPU {
	c, _ := p.readErr()
	return c
}

func (p *statsProbe) readErr() (redisCPU, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := p.rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return redisCPU{}, err
	}
	var c redisCPU
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "used_cpu_sys":
			c.sys = f
		case "used_cpu_user":
			c.user = f
		}
	}
	return c, nil
}

// cmdStat is one command's line of INFO commandstats.
type cmdStat struct{ calls, usec float64 }

// commands reads INFO commandstats: per command, calls and microseconds.
// Commands run by scripts count both on their own and inside EVALSHA.
func (p *statsProbe) commands() map[string]cmdStat {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := p.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil
	}
	m := make(map[string]cmdStat)
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(k, "cmdstat_") {
			continue
		}
		var st cmdStat
		for _, kv := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(val, 64)
			switch name {
			case "calls":
				st.calls = f
			case "usec":
				st.usec = f
			}
		}
		m[strings.TrimPrefix(k, "cmdstat_")] = st
	}
	return m
}

// topCommands formats the commands with the most time between two reads.
func topCommands(before, after map[string]cmdStat, top int) string {
	type d struct {
		name string
		cmdStat
	}
	var ds []d
	for k, a := range after {
		b := before[k]
		if a.calls > b.calls {
			ds = append(ds, d{k, cmdStat{a.calls - b.calls, a.usec - b.usec}})
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].usec > ds[j].usec })
	var sb strings.Builder
	for i, x := range ds {
		if i == top {
			break
		}
		fmt.Fprintf(&sb, "    %-16s %9.0f calls %9.0f ms %7.1f µs/call\n", x.name, x.calls, x.usec/1000, x.usec/x.calls)
	}
	return sb.String()
}
