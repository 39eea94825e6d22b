package main

import (
	"net/http"
	"os"
	"time"

	"github.com/latch-run/latch/remote"
	"github.com/spf13/pflag"
)

// connFlags are the connection flags every client command shares.
type connFlags struct {
	url    string
	key    string
	tenant string // Latch-Tenant, for the admin key
}

// clientFlags registers the connection flags on fs.
func clientFlags(fs *pflag.FlagSet) *connFlags {
	c := &connFlags{}
	fs.StringVar(&c.url, "url", envOr("LATCH_URL", "http://127.0.0.1:8080"), "server URL (LATCH_URL)")
	// The key's default is read when used, not shown: -h must not print it.
	fs.StringVar(&c.key, "key", "", "API key (default: LATCH_KEY)")
	fs.StringVar(&c.tenant, "tenant", os.Getenv("LATCH_TENANT"), "tenant to act for, with the admin key (LATCH_TENANT)")
	return c
}

// client is the API client of the flags given, LATCH_KEY without --key. It
// sends each request once: a command reports what the server answered and
// its exit code says whether to try again (6), so a script decides. Without
// retries it sends no Idempotency-Key of its own either, so a submit
// without --dedup-key has none.
func (c *connFlags) client() *remote.Client {
	key := c.key
	if key == "" {
		key = os.Getenv("LATCH_KEY")
	}
	return remote.New(c.url, key,
		remote.WithTenant(c.tenant),
		remote.WithRetry(remote.RetryPolicy{}),
		remote.WithHTTPClient(&http.Client{Timeout: 90 * time.Second}))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
