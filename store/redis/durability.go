package redis

import (
	"context"
	"fmt"

	"github.com/latch-run/latch/store"
)

var _ store.DurabilityChecker = (*Store)(nil)

// CheckDurability reads the server's persistence settings and says what a
// restart or crash can lose (see "Durability" in doc.go). A server that
// refuses CONFIG GET (as some managed services do) gets a warning that the
// settings could not be checked.
func (s *Store) CheckDurability(ctx context.Context) (string, error) {
	cfg, err := s.rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		return fmt.Sprintf("could not read the Redis persistence settings (%v): make sure AOF is on "+
			"(appendonly yes), or a Redis restart can lose acknowledged executions", err), nil
	}
	return durabilityWarning(cfg["appendonly"], cfg["appendfsync"], cfg["save"]), nil
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
