package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

var _ store.DurabilityChecker = (*Store)(nil)

// CheckDurability reads the server's persistence settings and says what a
// restart or crash can lose (see "Durability" in doc.go). A server that
// refuses CONFIG GET (as some managed services do) gets a warning that the
// settings could not be checked.
//
// On a Redis Cluster every primary is read, and each warning names the
// primaries it is about.
func (s *Store) CheckDurability(ctx context.Context) (string, error) {
	var mu sync.Mutex
	byWarning := map[string][]string{} // warning -> the primaries it is about
	err := s.eachPrimary(ctx, func(ctx context.Context, c *goredis.Client) error {
		cfg, err := c.ConfigGet(ctx, "*").Result()
		if err != nil {
			return err
		}
		if w := durabilityWarning(cfg["appendonly"], cfg["appendfsync"], cfg["save"]); w != "" {
			mu.Lock()
			byWarning[w] = append(byWarning[w], c.Options().Addr)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return fmt.Sprintf("could not read the Redis persistence settings (%v): make sure AOF is on "+
			"(appendonly yes), or a Redis restart can lose acknowledged executions", err), nil
	}
	var warnings []string
	for w, addrs := range byWarning {
		if s.cluster != nil {
			slices.Sort(addrs)
			w = "primaries " + strings.Join(addrs, ", ") + ": " + w
		}
		warnings = append(warnings, w)
	}
	slices.Sort(warnings)
	return strings.Join(warnings, "; "), nil
}

// durabilityWarning judges Redis's persistence settings.
func durabilityWarning(appendonly, appendfsync, save string) string {
	switch {
	case appendonly != "yes" && save == "":
		return "Redis runs without persistence (appendonly no, save \"\"): a Redis restart loses " +
			"every execution, dedup key, tenant and API key; set appendonly yes"
	case appendonly != "yes":
		return "Redis persists by RDB snapshots only (appendonly no): a Redis restart loses every " +
			"change acknowledged since the last snapshot; set appendonly yes"
	case appendfsync == "everysec":
		return "Redis AOF uses appendfsync everysec: a machine crash or power loss can lose about " +
			"the last second of acknowledged executions (a Redis process crash loses nothing); " +
			"appendfsync always closes that window"
	case appendfsync == "no":
		return "Redis AOF uses appendfsync no: a machine crash can lose acknowledged executions " +
			"the OS had not yet written; appendfsync always or everysec is safer"
	}
	return ""
}
