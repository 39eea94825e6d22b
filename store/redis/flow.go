package redis

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// Flows (docs/flows.md) are kept per execution, beside its hash: the
// journal (steps:<id>), buffered signals (sigbuf and signames) and the
// first answers of its signals' idempotency keys (sigkeys), all removed
// with the execution (lib.lua, remove); a suspended execution with a
// wake_at is in the wake set. Every change is one script: step.lua,
// suspend.lua, signal.lua, wake.lua and retry.lua.

// stepEntry is one journal entry as steps:<id> stores it (lib.lua,
// record): "<seq>:<started_us or ”>:<recorded_us>:<attempt>:<result>".
type stepEntry struct {
	seq  int64
	step store.Step
}

func parseStep(name, v string) (stepEntry, error) {
	f := strings.SplitN(v, ":", 5)
	if len(f) != 5 {
		return stepEntry{}, fmt.Errorf("redis: journal entry %q: malformed", name)
	}
	seq, err1 := strconv.ParseInt(f[0], 10, 64)
	rec, err2 := strconv.ParseInt(f[2], 10, 64)
	att, err3 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return stepEntry{}, fmt.Errorf("redis: journal entry %q: malformed", name)
	}
	st := store.Step{Name: name, Result: json.RawMessage(f[4]), RecordedAt: fromUS(rec), Attempt: att}
	if f[1] != "" {
		started, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return stepEntry{}, fmt.Errorf("redis: journal entry %q: malformed", name)
		}
		st.StartedAt = fromUS(started)
	}
	return stepEntry{seq: seq, step: st}, nil
}

// journal turns a claim's steps ({name, entry, ...}, lib.lua's
// journal_page) into the lease's Journal: nil when empty.
func journal(v any) (store.Journal, error) {
	arr, _ := v.([]any)
	if len(arr) == 0 {
		return nil, nil
	}
	j := make(store.Journal, len(arr)/2)
	for i := 0; i+1 < len(arr); i += 2 {
		name := asString(arr[i])
		e, err := parseStep(name, asString(arr[i+1]))
		if err != nil {
			return nil, err
		}
		j[name] = e.step.Result
	}
	return j, nil
}

// jsonOrNull is a result or signal data as stored: nil is JSON null.
func jsonOrNull(r json.RawMessage) string {
	if len(r) == 0 {
		return "null"
	}
	return string(r)
}

// optUS is a time as a script argument: ” for none.
func optUS(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return itoa(us(t))
}
