package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// closedPort is an address nothing listens on: connections are refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	got := interpretError(err)
	if !errors.Is(got, store.ErrUnavailable) {
		t.Errorf("%s: %v is not ErrUnavailable", what, got)
	}
	if !errors.Is(got, err) {
		t.Errorf("%s: the driver's error %v is lost", what, err)
	}
}

func wantAvailable(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if errors.Is(interpretError(err), store.ErrUnavailable) {
		t.Errorf("%s: %v is mapped to ErrUnavailable", what, err)
	}
}

// TestInterpretErrorUnavailable: the driver's errors of a server that is
// not there, gone, or not ready map to store.ErrUnavailable (the API's
// 503); the errors of a server that answered do not.
func TestInterpretErrorUnavailable(t *testing.T) {
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: closedPort(t), MaxRetries: -1, DialTimeout: 5 * time.Second})
	wantUnavailable(t, "command to a closed port", c.Ping(ctx).Err())
	c.Close()
	wantUnavailable(t, "command on a closed client", c.Ping(ctx).Err())
	wantUnavailable(t, "call on a closed Store", fmt.Errorf("redis: admit: %w", errClosed))
	wantAvailable(t, "context cancelled", context.Canceled)
	wantAvailable(t, "deadline passed", context.DeadlineExceeded)
}

// TestInterpretErrorReplies: the error replies of a server that is loading
// its data, lost its master or was demoted by a failover are unavailable;
// other replies are not. The replies are real ones, sent by a script.
func TestInterpretErrorReplies(t *testing.T) {
	opt, err := goredis.ParseURL(testdb.URL(t, testdb.RedisEnv, "the driver errors of Redis replies"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := goredis.NewClient(opt)
	defer c.Close()
	reply := func(msg string) error {
		return c.Eval(ctx, "return redis.error_reply(ARGV[1])", nil, msg).Err()
	}
	for _, msg := range []string{"LOADING Redis is loading the dataset in memory",
		"MASTERDOWN Link with MASTER is down", "READONLY You can't write against a read only replica.",
		"TRYAGAIN Multiple keys request during rehashing of slot", "CLUSTERDOWN The cluster is down"} {
		wantUnavailable(t, msg, reply(msg))
	}
	wantAvailable(t, "an error of the script", reply("ERR something went wrong"))
	wantAvailable(t, "WRONGTYPE", reply("WRONGTYPE Operation against a key holding the wrong kind of value"))
	wantAvailable(t, "NOSCRIPT", c.EvalSha(ctx, "0000000000000000000000000000000000000000", nil).Err())

	// A connection the server closes under a command (as a restart closes
	// every one): the command is a blocking pop that waits, so the kill
	// lands while it is in flight.
	opt.PoolSize, opt.MaxRetries = 1, -1
	victim := goredis.NewClient(opt)
	defer victim.Close()
	id, err := victim.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	popped := make(chan error, 1)
	go func() { popped <- victim.BLPop(ctx, 20*time.Second, testdb.Name("latch-test-nokey-")).Err() }()
	for {
		// Kill once the pop is blocked: the server lists the client's
		// command as blpop.
		list, err := c.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		blocked := false
		for line := range strings.Lines(list) {
			blocked = blocked || strings.HasPrefix(line, fmt.Sprintf("id=%d ", id)) && strings.Contains(line, " cmd=blpop")
		}
		if blocked {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling for the pop to start, not asserting on time
	}
	if err := c.ClientKillByFilter(ctx, "ID", fmt.Sprint(id)).Err(); err != nil {
		t.Fatal(err)
	}
	wantUnavailable(t, "command on a connection the server closed", <-popped)
}
