package engine

import (
	"context"
	"time"
)

// every calls f at start (if atStart) and then every interval until ctx is
// done. A call that runs long delays the next one rather than overlapping it.
func every(ctx context.Context, interval time.Duration, atStart bool, f func(context.Context)) {
	if atStart {
		f(ctx)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}
