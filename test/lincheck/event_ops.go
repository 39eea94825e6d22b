package lincheck

import (
	"context"
	"fmt"
	"strings"

	"github.com/latch-run/latch/store"
)

// StartOut is one subscription's start in a publish's answer: the
// execution it started, or the refusal that kept it from starting.
type StartOut struct {
	Sub string
	ID  string
	Err Code
}

// PublishOut is a publish's answer (store.PublishResult).
type PublishOut struct {
	EventID  string
	Resumed  int
	Starts   []StartOut
	Replayed bool
}

func (p PublishOut) equal(o PublishOut) bool {
	if p.EventID != o.EventID || p.Resumed != o.Resumed || p.Replayed != o.Replayed || len(p.Starts) != len(o.Starts) {
		return false
	}
	for i := range p.Starts {
		if p.Starts[i] != o.Starts[i] {
			return false
		}
	}
	return true
}

func (p PublishOut) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "event %s resumed %d", short(p.EventID), p.Resumed)
	for _, st := range p.Starts {
		fmt.Fprintf(&b, " %s→", st.Sub)
		if st.Err != OK {
			b.WriteString(string(st.Err))
		} else {
			b.WriteString(short(st.ID))
		}
	}
	if p.Replayed {
		b.WriteString(" replayed")
	}
	return b.String()
}

// doPublish runs a Publish against s (Do's share).
func doPublish(ctx context.Context, s store.Store, in Input) Output {
	var out Output
	res, err := s.Publish(ctx, &store.PublishParams{Tenant: in.Tenant, Name: in.Name, Key: in.EvKey,
		Data: rawOrNil(in.Data), IdempotencyKey: in.IdemKey, Now: timeOf(in.Now)})
	out.Err = codeOf(err)
	if err == nil && res != nil {
		out.Published = PublishOut{EventID: res.EventID, Resumed: res.Resumed, Replayed: res.Replayed}
		for _, st := range res.Started {
			out.Published.Starts = append(out.Published.Starts, StartOut{Sub: st.Subscription, ID: st.ExecutionID, Err: codeOf(st.Err)})
		}
	}
	return out
}
